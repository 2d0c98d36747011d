import { APP_ERROR_STATUS, type AppError, type TEnqueueRequest, type TEnqueueResult, ZEnqueueBatchRequest, ZTraceparent } from "@porter/contracts";
import { type EnqueueInput, enqueueJobs } from "@porter/core/sql/enqueue-jobs";
import type pg from "pg";
import { ProducerError } from "./producer";

/**
 * A job enqueued from the producer's own database session: the HTTP API's request, with its tenant
 * always named (there is no API key to take it from; the database role's grants are the authority).
 */
export type TransactionalEnqueueRequest = TEnqueueRequest & { tenant_id: string };

/** Options of {@link enqueue}. */
export type TransactionalEnqueueOptions = {
  /** Ceiling of a payload's serialized size (413 past it). Default 64 KiB, as the HTTP API's. */
  maxPayloadBytes?: number;
  /**
   * The W3C traceparent the jobs are enqueued under (those that carry neither a `traceparent` nor
   * a `trace_id` of their own), parent of the `porter.enqueue` span. Default: the active
   * OpenTelemetry context.
   */
  traceparent?: string;
};

/** Name of the savepoint that makes one enqueue all-or-nothing inside the caller's transaction. */
const SAVEPOINT = "porter_enqueue";

/**
 * Enqueues jobs inside the caller's transaction on `client` (a `pg` PoolClient or Client after
 * `BEGIN`): the jobs exist only if that transaction commits, and workers are woken at its commit.
 * The same validation (the contracts' zod), idempotency (the same tenant, key and payload return
 * the same job, `deduplicated: true`; another payload is a 409) and admission (a tenant over its
 * backlog cap or arrival rate is a 429 with `retryAfterS`) as `producer.enqueueBatch`; results in
 * input order. Every job names its `tenant_id`; any known job type may be enqueued: the role the
 * client is connected as needs the runtime role's grants (`GRANT porter_app TO <role>`).
 *
 * Invalid input (400) is refused before any statement, so the transaction is untouched. Anything
 * refused later (unknown job type or tenant, 409, 413, 429, a value PostgreSQL refuses) is rolled
 * back to a savepoint taken first: nothing of the batch stays and the caller's transaction is still
 * usable (commit it or not). Refusals are {@link ProducerError}s with the HTTP API's status and
 * code; database errors (permission denied, a lost connection) are thrown as pg raised them.
 * Settings of the caller's transaction (synchronous_commit…) are never changed. One call at a
 * time per client, as with any statement of a transaction. The transaction must be READ COMMITTED
 * (the default) or SERIALIZABLE. For a tenant with admission limits, the admission lock is held
 * until the caller's transaction ends: that tenant's other producers wait for it, so keep it short.
 */
export const enqueue = async (
  client: pg.PoolClient | pg.Client,
  jobs: TransactionalEnqueueRequest[],
  options: TransactionalEnqueueOptions = {},
): Promise<TEnqueueResult[]> => {
  if ("totalCount" in client && "idleCount" in client) {
    // A pool would run each statement on any of its connections, outside the caller's transaction.
    throw new TypeError("enqueue(client, jobs) takes the client of your transaction (pool.connect(), then BEGIN), not a pool");
  }
  const inputs = validate(jobs);
  if (options.traceparent !== undefined && !ZTraceparent.safeParse(options.traceparent).success) {
    throw new ProducerError(`invalid traceparent option: ${options.traceparent}`, { status: 400, code: "BAD_REQUEST", details: { option: "traceparent" } });
  }
  await beginSavepoint(client);
  try {
    const results = await enqueueJobs(client, inputs, { maxPayloadBytes: options.maxPayloadBytes, traceparent: options.traceparent });
    await client.query(`RELEASE SAVEPOINT ${SAVEPOINT}`);
    return results;
  } catch (error) {
    try {
      await client.query(`ROLLBACK TO SAVEPOINT ${SAVEPOINT}; RELEASE SAVEPOINT ${SAVEPOINT}`);
    } catch {
      // The connection is gone (or the server refused): the caller's transaction fails with it.
    }
    throw asProducerError(error);
  }
};

/**
 * Takes the savepoint, in one round trip with the transaction's isolation level. Outside a
 * transaction block PostgreSQL refuses the savepoint (25P01). REPEATABLE READ is refused too:
 * admission counts a tenant's backlog after waiting for the other producers of that tenant, and
 * only a statement's own snapshot (READ COMMITTED) sees what they committed meanwhile — under one
 * snapshot for the whole transaction, two producers could both pass a backlog cap that only one
 * fits. (SERIALIZABLE detects that conflict itself and fails one of them with 40001: retry it.)
 */
const beginSavepoint = async (client: pg.PoolClient | pg.Client): Promise<void> => {
  let isolation: string | undefined;
  try {
    const results = (await client.query(`SAVEPOINT ${SAVEPOINT}; SELECT current_setting('transaction_isolation') AS isolation`)) as unknown as Array<
      pg.QueryResult<{ isolation: string }>
    >;
    isolation = results[1]?.rows[0]?.isolation;
  } catch (error) {
    if ((error as { code?: unknown }).code === "25P01") {
      throw new Error("enqueue(client, jobs) runs inside your transaction: send BEGIN on this client first", { cause: error });
    }
    throw error;
  }
  if (isolation === "repeatable read") {
    await client.query(`ROLLBACK TO SAVEPOINT ${SAVEPOINT}; RELEASE SAVEPOINT ${SAVEPOINT}`);
    throw new Error("enqueue(client, jobs) needs a READ COMMITTED (the default) or SERIALIZABLE transaction, not REPEATABLE READ");
  }
};

/** The requests as core's inputs, or a 400 naming the first few issues; no statement is sent. */
const validate = (jobs: TransactionalEnqueueRequest[]): EnqueueInput[] => {
  const parsed = ZEnqueueBatchRequest.safeParse({ jobs });
  if (!parsed.success) {
    const issues = parsed.error.issues;
    const summary = issues
      .slice(0, 5)
      .map((issue) => `${issue.path.length > 0 ? `${issue.path.map(String).join(".")}: ` : ""}${issue.message}`)
      .join("; ");
    throw new ProducerError(`invalid input: ${summary}`, { status: 400, code: "BAD_REQUEST", details: { issues } });
  }
  return parsed.data.jobs.map((job, index) => {
    if (job.tenant_id === undefined) {
      throw new ProducerError(`jobs[${index}]: tenant_id is required: an enqueue in your own transaction has no API key to take it from`, {
        status: 400,
        code: "BAD_REQUEST",
        details: { index },
      });
    }
    return { ...job, tenant_id: job.tenant_id };
  });
};

/** Core's refusals (AppError, by shape: a bundle may hold two copies of contracts) as ProducerErrors. */
const asProducerError = (error: unknown): unknown => {
  const code = (error as { code?: unknown } | null)?.code;
  if (!(error instanceof Error) || error.name !== "AppError" || typeof code !== "string" || !(code in APP_ERROR_STATUS)) return error;
  const app = error as AppError;
  return new ProducerError(app.message, {
    status: APP_ERROR_STATUS[app.code],
    code: app.code,
    retryAfterS: app.retryAfterS,
    details: app.details,
    cause: error,
  });
};
