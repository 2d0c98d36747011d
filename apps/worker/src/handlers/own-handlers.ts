// A user's own handlers (`porter-worker --handlers <module>`, `startWorker({ handlers })`): loading
// the module, and the checks that make a wrong set a startup error rather than jobs that never run.
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { AnyHandler } from "@porter/sdk";
import type pg from "pg";
import { diagHandlers } from "./diag";
import { createHandlerMap, type HandlerMap } from "./handler-map";
import { builtInDemoHandlers } from "./index";
import { simulatedHandlers } from "./simulated";
import type { WebhookDeliverDeps } from "./webhook-deliver";

/** A handler set that cannot run: the worker does not start (the bin: one line, exit code 2). */
export class HandlerSetupError extends Error {
  override name = "HandlerSetupError";
}

/** A value made with `defineHandler` (checked by shape: the module may carry its own copy of the SDK). */
export const isHandler = (value: unknown): value is AnyHandler => {
  if (typeof value !== "object" || value === null) return false;
  const h = value as Partial<AnyHandler>;
  return typeof h.type === "string" && h.type.length > 0 && typeof h.run === "function" && typeof h.parsePayload === "function";
};

/**
 * The handlers a module exports: its default export and its named exports, each a handler or an
 * array of handlers (one handler exported under two names counts once). Any other export, or none
 * at all, is a HandlerSetupError.
 */
export const handlersOfModule = (module: Record<string, unknown>, from: string): AnyHandler[] => {
  const found = new Set<AnyHandler>();
  for (const [name, value] of Object.entries(module)) {
    if (name === "__esModule") continue;
    const items = Array.isArray(value) ? value : [value];
    items.forEach((item, i) => {
      if (!isHandler(item)) {
        const where = Array.isArray(value) ? `${name}[${i}]` : name;
        throw new HandlerSetupError(`${from}: export "${where}" is not a handler (make handlers with defineHandler from @porter/sdk)`);
      }
      found.add(item);
    });
  }
  if (found.size === 0) throw new HandlerSetupError(`${from}: the module exports no handlers`);
  return [...found];
};

/**
 * Imports the handler module at `specifier` (a TypeScript or JavaScript file, relative to `cwd`;
 * the worker runs under tsx's loader) and returns its handlers.
 */
export const loadHandlerModule = async (specifier: string, cwd = process.cwd()): Promise<AnyHandler[]> => {
  const path = resolve(cwd, specifier);
  if (!existsSync(path)) throw new HandlerSetupError(`handler module ${specifier}: no such file (${path})`);
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (error) {
    const message = (error instanceof Error ? error.message : String(error)).split("\n")[0];
    throw new HandlerSetupError(`handler module ${specifier} could not be loaded: ${message}`);
  }
  return handlersOfModule(module, `handler module ${specifier}`);
};

/**
 * The worker's handler map with `own` added: the built-in diag.* handlers (reserved: a handler of
 * `own` for one of their types is a HandlerSetupError), the simulated demo handlers except those
 * `own` replaces (a user's real handler for a demo job type such as `email.send`), and `own`.
 * Two of `own` for one job type are a HandlerSetupError. With `deps` (the worker's database),
 * `webhook.deliver` is the real delivery of alert webhooks (handlers/webhook-deliver.ts).
 */
export const withOwnHandlers = (own: readonly AnyHandler[], deps?: WebhookDeliverDeps): HandlerMap => {
  const reserved = new Set(diagHandlers.map((h) => h.type));
  const ownTypes = new Set<string>();
  for (const handler of own) {
    if (ownTypes.has(handler.type)) throw new HandlerSetupError(`two handlers for job type "${handler.type}"`);
    if (reserved.has(handler.type)) throw new HandlerSetupError(`job type "${handler.type}" has a built-in handler (diag.* are reserved)`);
    ownTypes.add(handler.type);
  }
  return createHandlerMap([...diagHandlers, ...builtInDemoHandlers(deps).filter((h) => !ownTypes.has(h.type)), ...own]);
};

/** The simulated demo handlers `own` replaces. */
export const replacedDemoTypes = (own: readonly AnyHandler[]): string[] =>
  simulatedHandlers.filter((s) => own.some((h) => h.type === s.type)).map((s) => s.type);

/**
 * Checks `own` against the job-type registry (`job_types` and their queues): a type it does not
 * know is a HandlerSetupError, and so is a type whose queue belongs to another pool than `poolId`
 * unless `otherPools` is "skip" (one module for every pool's worker, as `npm start` runs them), in
 * which case those handlers are left out. Returns the handlers this pool's worker runs.
 */
export const checkOwnHandlers = async (
  db: pg.Pool,
  poolId: string,
  own: readonly AnyHandler[],
  otherPools: "error" | "skip" = "error",
): Promise<AnyHandler[]> => {
  if (own.length === 0) return [];
  const pool = await db.query(`SELECT 1 FROM pools WHERE id = $1`, [poolId]);
  if (pool.rowCount === 0) throw new Error(`unknown pool "${poolId}"`);
  const { rows } = await db.query<{ id: string; queue_id: string; pool_id: string }>(
    `SELECT jt.id, jt.queue_id, q.pool_id FROM job_types jt JOIN queues q ON q.id = jt.queue_id WHERE jt.id = ANY($1::text[])`,
    [own.map((h) => h.type)],
  );
  const registered = new Map(rows.map((r) => [r.id, r]));
  const kept: AnyHandler[] = [];
  for (const handler of own) {
    const type = registered.get(handler.type);
    if (!type) throw new HandlerSetupError(`handler for job type "${handler.type}": the job-type registry has no such type (add it first)`);
    if (type.pool_id === poolId) kept.push(handler);
    else if (otherPools === "error") {
      throw new HandlerSetupError(`handler for job type "${handler.type}": its queue "${type.queue_id}" is in pool "${type.pool_id}", not "${poolId}"`);
    }
  }
  return kept;
};
