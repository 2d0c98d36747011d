import type { AnyHandler } from "@porter/sdk";

/** Job type → handler, as a worker process runs them. */
export type HandlerRegistry = ReadonlyMap<string, AnyHandler>;

/** Builds a registry; two handlers for one job type are a programming error. */
export const createHandlerRegistry = (handlers: readonly AnyHandler[]): HandlerRegistry => {
  const registry = new Map<string, AnyHandler>();
  for (const handler of handlers) {
    if (registry.has(handler.type)) throw new Error(`two handlers registered for job type "${handler.type}"`);
    registry.set(handler.type, handler);
  }
  return registry;
};
