import type { AnyHandler } from "@porter/sdk";

/** Job type → handler, as a worker process runs them. */
export type HandlerMap = ReadonlyMap<string, AnyHandler>;

/** Builds the map; two handlers for one job type are a programming error. */
export const createHandlerMap = (handlers: readonly AnyHandler[]): HandlerMap => {
  const map = new Map<string, AnyHandler>();
  for (const handler of handlers) {
    if (map.has(handler.type)) throw new Error(`two handlers registered for job type "${handler.type}"`);
    map.set(handler.type, handler);
  }
  return map;
};
