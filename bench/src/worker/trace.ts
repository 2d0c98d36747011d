import { writeFileSync } from "node:fs";
import type pg from "pg";
import { pgClientClasses } from "./pg-clients";
import { nowMs } from "./protocol";

/** One traced event: a statement (dispatch `t`, result `end`), a notification received, a handler start. */
export type TraceEvent = { t: number; end?: number; kind: string; detail?: string | number };

const events: TraceEvent[] = [];
let isInstalled = false;

/** Records an event when tracing is on (`BENCH_TRACE` set in the worker process), else nothing. */
export const traceEvent = (kind: string, detail?: string | number): void => {
  if (isInstalled) events.push({ t: nowMs(), kind, detail });
};

type AnyQuery = (this: pg.Client, ...args: unknown[]) => unknown;

/**
 * Probe only (`bench/src/probe/idle-probe.ts`): wraps `pg.Client.prototype.query` and the clients'
 * `notification` events of this process, so every statement's dispatch and result and every
 * notification's arrival are timestamped on the bench's clock (`nowMs`). Written to `path` by `flushTrace`.
 */
export const installTrace = (): void => {
  isInstalled = true;
  for (const Client of pgClientClasses()) patchClient(Client);
};

const patchClient = (Client: typeof pg.Client): void => {
  const original = Client.prototype.query as unknown as AnyQuery;
  const patched: AnyQuery = function (this: pg.Client, ...args: unknown[]) {
    const first = args[0] as { text?: unknown } | string | undefined;
    const text = typeof first === "string" ? first : typeof first?.text === "string" ? first.text : "?";
    const event: TraceEvent = {
      t: nowMs(),
      kind: "sql",
      detail: `${(this as unknown as { processID?: number }).processID ?? "?"} ${/porter_claim|skip\s+locked/i.test(text) ? "CLAIM " : ""}${text.replace(/\s+/g, " ").trim().slice(0, 60)}`,
    };
    events.push(event);
    const done = () => {
      event.end = nowMs();
    };
    const last = args.length - 1;
    const callback = args[last];
    if (typeof callback === "function") {
      args[last] = (error: unknown, res: unknown) => {
        done();
        (callback as (e: unknown, r: unknown) => void)(error, res);
      };
      return original.apply(this, args);
    }
    const result = original.apply(this, args) as Promise<unknown> | undefined;
    if (result && typeof result.then === "function") result.then(done, done);
    return result;
  };
  Client.prototype.query = patched as unknown as typeof pg.Client.prototype.query;
  const emit = Client.prototype.emit;
  Client.prototype.emit = function (this: pg.Client, name: string | symbol, ...rest: unknown[]) {
    if (name === "notification") {
      const m = rest[0] as { channel?: string; payload?: string };
      events.push({ t: nowMs(), kind: "notify", detail: `${m.channel} ${m.payload ?? ""}`.slice(0, 60) });
    }
    return emit.call(this, name, ...rest);
  } as typeof emit;
};

/** Writes the events so far to `path` (JSON). */
export const flushTrace = (path: string): void => writeFileSync(path, JSON.stringify(events));
