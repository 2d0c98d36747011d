// The handler API: what a handler author writes and what the worker hands it.
// `pg`, `pino`, `zod` and core's effect types are type-only imports here: a producer importing
// @porter/sdk loads none of them at runtime; the worker passes the implementations in through the
// context.
import { PermanentError, RetryableError } from "@porter/contracts";
import type { EffectOptions, EffectStatement, EffectStatementResult } from "@porter/core/sql/apply-effect";
import type pg from "pg";
import type { Logger } from "pino";
import type { z } from "zod";
import type { Progress } from "./progress";

export { PermanentError, RetryableError };

/** Default payload type of a handler declared without a schema: a JSON object of refs. */
export type UnknownPayload = Record<string, unknown>;

/** The envelope fields a handler needs, with the payload typed by the handler's schema. */
export type Job<P = UnknownPayload> = {
  job_id: string;
  job_type: string;
  tenant_id: string;
  payload: P;
  /** This attempt's number, from 1. */
  attempt: number;
  max_attempts: number;
  /** The job's hard deadline, if any; the attempt's signal aborts before it. */
  deadline_at: Date | null;
  /** Seconds this attempt may run before its signal aborts with a timeout. */
  timeout_s: number;
  trace_id: string;
  idempotency_key: string;
  priority: number;
};

/**
 * The attempt's trace context (`ctx.trace`). With an OpenTelemetry SDK registered in the worker it
 * is the attempt's own `porter.attempt` span (a child of the job's stored traceparent); without
 * one, the stored traceparent itself. Pass `traceparent` on outgoing calls to continue the trace.
 */
export type JobTrace = {
  /** The trace id: the traceparent's, else the job's trace_id (then any text the producer gave). */
  traceId: string;
  /** The attempt span's id, else the stored parent's; null with neither. */
  spanId: string | null;
  /** The W3C traceparent of the attempt's span, else the stored one; null with neither. */
  traceparent: string | null;
  /** The traceparent the job was enqueued under (the attempt span's parent), null if none. */
  parent: string | null;
  /** True when an OpenTelemetry SDK records the attempt's span. */
  isRecording: boolean;
};

export type { EffectOptions, EffectStatement, EffectStatementResult };

/** `ctx.effect`: a function of a transaction, or one statement. */
export type ApplyEffect = {
  <T>(key: string, fn: (tx: pg.PoolClient) => Promise<T>, options?: EffectOptions): Promise<T>;
  <R extends pg.QueryResultRow = pg.QueryResultRow>(key: string, statement: EffectStatement): Promise<EffectStatementResult<R>>;
};

/**
 * What the worker gives a handler for one attempt. Its members are read through accessors (each
 * made on first read): read them, destructure them (`const { signal, effect } = ctx`) or pass ctx
 * on; a spread copy (`{ ...ctx }`) holds only `attempt`, `workerId` and `lastCheckpoint`.
 */
export type HandlerContext = {
  /**
   * Aborted when the attempt must stop: its timeout or deadline passed (reason: core's
   * TimeoutError), the job was cancelled (CancelledError), its lease was lost, or the worker is
   * draining and handed the job back. Pass it to I/O and check it at safe points.
   */
  signal: AbortSignal;
  /** Extends the lease now (the worker also heartbeats on its own); throws if the lease was lost. */
  heartbeat: () => Promise<void>;
  /**
   * Runs `fn` at most once per (tenant, key), ever: a redelivered job gets the stored result of
   * the first application instead. Writes made through `tx` commit together with the ledger row,
   * or not at all. Refused (throws) once this attempt no longer holds its lease — before `fn`, or
   * at commit when the lease was lost while `fn` ran (rescued, handed back): then nothing of it
   * commits and the job's next attempt applies it; what `fn` did outside `tx` may happen again,
   * as after a crash in `fn`. Costs two round trips besides `fn`'s own statements.
   *
   * `{ txOnly: true }` declares that `fn` does nothing but statements through `tx` (no I/O outside
   * it). `fn` then runs first and the claim comes last, in the commit's own message: one round
   * trip besides `fn`'s statements instead of two. When the key was applied before (or by a
   * concurrent attempt that committed first) or the lease is gone, `fn`'s writes roll back and its
   * outcome is discarded: the stored result is returned (one more transaction, `fn` not run again)
   * or the effect refused. So `fn` may run when the key was applied — harmless only because it
   * writes nothing outside `tx`. `fn` may not read through a cursor.
   *
   * `ctx.effect(key, { text, values })` — an effect that is one statement — is one round trip in
   * all, like the statement autocommitted: the statement, the lease check and the ledger row go in
   * one message and commit together. It resolves `{ applied: true, rowCount, rows }`, or
   * `{ applied: false, rowCount: 0, rows: [] }` when the key was applied before (the statement's
   * writes rolled back); refused (throws) when the lease is gone, with nothing committed.
   */
  effect: ApplyEffect;
  /** pino child logger bound to jobId, jobType, tenantId, attempt, workerId, trace_id and span_id (of `trace`). */
  logger: Logger;
  /**
   * The attempt's trace context. The handler runs inside the attempt span's OpenTelemetry context,
   * so spans it starts nest under `porter.attempt <job_type>`.
   */
  trace: JobTrace;
  /**
   * Records this attempt's progress: last value wins (console job page, finished job). Validated at
   * once (fraction 0..1, message ≤ 200 chars, step ≤ 100 chars; a HandlerContextError otherwise,
   * nothing recorded), written with the worker's next lease heartbeat — no round trip per call.
   */
  progress: (progress: Progress) => void;
  /**
   * Persists `data` (JSON, ≤ 16 KiB) as the job's checkpoint, fenced by this attempt's lease: the
   * promise resolves once it is durable (one statement per call, calls applied in order). The next
   * attempt of the job — after a retry, a lease rescue (the worker died) or a redrive — receives it
   * as `ctx.lastCheckpoint`; a dead job's structured error carries it as `last_checkpoint`.
   * Throws a HandlerContextError at once for data that is not JSON or is too large (nothing
   * written); rejects with a lease error if the attempt no longer holds its lease.
   */
  checkpoint: (data: unknown) => Promise<void>;
  /** The last checkpoint a previous attempt of this job persisted (null if none): resume from it. */
  lastCheckpoint: unknown;
  attempt: number;
  workerId: string;
};

/** A handler as the worker's handler map holds it. */
export type Handler<P = UnknownPayload, R = unknown> = {
  type: string;
  /** The payload schema, if the handler declared one. */
  payload: z.ZodType<P> | undefined;
  run: (job: Job<P>, ctx: HandlerContext) => Promise<R>;
  /**
   * Validates a raw payload with the handler's schema. An invalid payload throws a
   * PermanentError with code INVALID_PAYLOAD (no retry can fix it).
   */
  parsePayload: (raw: unknown) => P;
};

/** A handler of any payload and result, for registries. */
// biome-ignore lint/suspicious/noExplicitAny: a registry holds handlers of different payloads; `run` takes what `parsePayload` returned, which only `any` can say (unknown and never each break one side)
export type AnyHandler = Handler<any, unknown>;

type ZodLike = { safeParse: (input: unknown) => { success: true; data: unknown } | { success: false; error: { issues: readonly ZodIssueLike[] } } };
type ZodIssueLike = { path: readonly PropertyKey[]; message: string };

const describeIssues = (issues: readonly ZodIssueLike[]): string =>
  issues
    .slice(0, 5)
    .map((i) => `${i.path.length > 0 ? i.path.map(String).join(".") : "(payload)"}: ${i.message}`)
    .join("; ") + (issues.length > 5 ? `; … ${issues.length - 5} more` : "");

/**
 * Declares a handler for one job type. With a zod `payload` schema the payload is validated before
 * `run` and typed by the schema; without one it is passed as a plain object.
 *
 * @example
 * export const parse = defineHandler({
 *   type: "document.parse",
 *   payload: z.object({ source_ref: z.string() }),
 *   run: async (job, ctx) => ({ artifact_ref: await parseDocument(job.payload.source_ref, ctx.signal) }),
 * });
 */
export const defineHandler = <S extends z.ZodType = z.ZodType<UnknownPayload>, R = unknown>(definition: {
  type: string;
  payload?: S;
  run: (job: Job<z.output<S>>, ctx: HandlerContext) => Promise<R>;
}): Handler<z.output<S>, R> => {
  const schema = definition.payload as (S & ZodLike) | undefined;
  return {
    type: definition.type,
    payload: schema as z.ZodType<z.output<S>> | undefined,
    run: definition.run,
    parsePayload: (raw) => {
      if (!schema) {
        if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
          throw new PermanentError("invalid payload: expected a JSON object", { code: "INVALID_PAYLOAD" });
        }
        return raw as z.output<S>;
      }
      const parsed = schema.safeParse(raw);
      if (!parsed.success) {
        throw new PermanentError(`invalid payload for ${definition.type}: ${describeIssues(parsed.error.issues)}`, {
          code: "INVALID_PAYLOAD",
          cause: parsed.error,
        });
      }
      return parsed.data as z.output<S>;
    },
  };
};
