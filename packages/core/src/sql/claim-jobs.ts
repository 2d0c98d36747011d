import pg from "pg";
import type { Db } from "../db";

/** A job as its worker receives it, with the lease and the queue policy its attempt runs under. */
export type ClaimedJob = {
  id: string;
  jobId: string;
  jobType: string;
  queueId: string;
  tenantId: string;
  payload: Record<string, unknown>;
  priority: number;
  idempotencyKey: string;
  attempt: number;
  maxAttempts: number;
  timeoutS: number;
  deadlineAt: Date | null;
  traceId: string;
  leaseToken: string;
  leaseSeconds: number;
  backoffBaseMs: number;
  backoffCapMs: number;
  cancelRequested: boolean;
  /** The queue's resource key (a provider's 429 reported against it slows it for everyone). */
  resourceKeyId: string | null;
  /**
   * The claim marked this attempt started (it goes into a free slot now). False for a prefetched
   * job: it must be marked with `startJobs` before its handler runs, and until then an attempt
   * rescued from it is not counted (`not_started`).
   */
  isStarted: boolean;
  /** The job's last durable checkpoint (`ctx.checkpoint` of an earlier attempt), null if none: `ctx.lastCheckpoint`. */
  lastCheckpoint: unknown;
  /** The W3C traceparent the job was enqueued under (its attempts' spans are children of it), null if none. */
  traceparent: string | null;
};

/**
 * A timestamptz as PostgreSQL prints it (ISO style: `2026-11-30 10:50:22.123456+00`, offset in
 * hours or hours:minutes) in a fraction of the time of pg's general date parser, which was a
 * visible share of the worker's CPU per job: read by character codes, no regular expression and
 * no substrings (a claimed row carries four timestamps; the regular-expression version was still
 * 6–7% of the worker's busy CPU in the burn-down). Anything else (infinity, BC dates, years before
 * 100, offsets with seconds) goes to pg's parser.
 */
const pgParseTimestamptz = pg.types.getTypeParser(1184, "text") as (text: string) => Date;
/** The `n` decimal digits of `text` at `at` as a number, -1 if any is not a digit. */
const digitsAt = (text: string, at: number, n: number): number => {
  let value = 0;
  for (let i = at; i < at + n; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
};
const [DASH, SPACE, COLON, DOT, PLUS] = [45, 32, 58, 46, 43];
export const parseTimestamptz = (text: string): Date => {
  const length = text.length;
  if (
    length < 22
    || text.charCodeAt(4) !== DASH
    || text.charCodeAt(7) !== DASH
    || text.charCodeAt(10) !== SPACE
    || text.charCodeAt(13) !== COLON
    || text.charCodeAt(16) !== COLON
  ) {
    return pgParseTimestamptz(text);
  }
  let at = 19;
  let ms = 0;
  if (text.charCodeAt(at) === DOT) {
    let digits = 0;
    for (at++; at < length; at++, digits++) {
      const digit = text.charCodeAt(at) - 48;
      if (digit < 0 || digit > 9) break;
      if (digits < 3) ms = ms * 10 + digit;
    }
    if (digits === 0 || digits > 6) return pgParseTimestamptz(text);
    for (; digits < 3; digits++) ms *= 10;
  }
  const sign = text.charCodeAt(at);
  const offsetHours = digitsAt(text, at + 1, 2);
  at += 3;
  let offsetMinutes = 0;
  if (at < length) {
    if (text.charCodeAt(at) === COLON) at++;
    offsetMinutes = digitsAt(text, at, 2);
    at += 2;
  }
  const year = digitsAt(text, 0, 4);
  const month = digitsAt(text, 5, 2);
  const day = digitsAt(text, 8, 2);
  const hour = digitsAt(text, 11, 2);
  const minute = digitsAt(text, 14, 2);
  const second = digitsAt(text, 17, 2);
  // A digit that was not one (-1) makes the OR negative; Date.UTC reads years 0–99 as 19xx.
  if (at !== length || (sign !== PLUS && sign !== DASH) || year < 100 || (month | day | hour | minute | second | offsetHours | offsetMinutes) < 0) {
    return pgParseTimestamptz(text);
  }
  const offset = (offsetHours * 60 + offsetMinutes) * (sign === DASH ? -60_000 : 60_000);
  return new Date(Date.UTC(year, month - 1, day, hour, minute, second, ms) - offset);
};

const TIMESTAMPTZ_OID = 1184;
/** The claim's result types: timestamps through `parseTimestamptz`, everything else as pg parses it. */
export const claimTypes = {
  getTypeParser: (oid: number, format?: "text" | "binary") => (oid === TIMESTAMPTZ_OID ? parseTimestamptz : pg.types.getTypeParser(oid, format ?? "text")),
} as pg.CustomTypesConfig;

/**
 * The claim's columns, in order (rows come back as arrays: no per-row keyed object to build and
 * collect), of `porter_claim`'s rows and of `porter_handover`'s (complete-jobs.ts).
 */
export const CLAIM_COLUMNS = `id::text, job_id::text, job_type, queue_id, tenant_id, payload, priority, idempotency_key, attempt,
                  max_attempts, timeout_s, deadline_at, trace_id, lease_token::text, lease_seconds, backoff_base_ms,
                  backoff_cap_ms, cancel_requested, resource_key_id, started, last_checkpoint, traceparent, bound, claim_order`;

// biome-ignore format: the tuple reads against CLAIM_COLUMNS, several columns a line
export type ClaimRow = [
  id: string, jobId: string, jobType: string, queueId: string, tenantId: string, payload: Record<string, unknown>,
  priority: number, idempotencyKey: string, attempt: number, maxAttempts: number, timeoutS: number,
  deadlineAt: Date | null, traceId: string, leaseToken: string, leaseSeconds: number, backoffBaseMs: number,
  backoffCapMs: number, cancelRequested: boolean, resourceKeyId: string | null, isStarted: boolean, lastCheckpoint: unknown, traceparent: string | null, bound: string | null, claimOrder: number | null,
];

/**
 * A claim's job rows in claim order. The routine returns them in its update's order, with each
 * row's place (`claim_order`) instead of sorting them (a sort of the wide rows cost 3.8% of the
 * claim's PostgreSQL instructions, bench/src/probe/claim-callgrind.ts). That order is the claim's
 * for a large backlog, not for a small table (claim-policy.int.test.ts fails without this). Sorted
 * here only when out of order.
 */
export const inClaimOrder = <R extends { [k: number]: unknown }>(rows: R[], at: number): R[] => {
  for (let i = 1; i < rows.length; i++) {
    if ((rows[i - 1]![at] as number) > (rows[i]![at] as number)) return rows.sort((a, b) => (a[at] as number) - (b[at] as number));
  }
  return rows;
};
/** Where `claim_order` is in a ClaimRow. */
export const CLAIM_ORDER_AT = 23;
/** Where `bound` is in a ClaimRow. */
const BOUND_AT = 22;

/** A claimed job from its row. */
export const toClaimedJob = (r: ClaimRow): ClaimedJob => ({
  id: r[0],
  jobId: r[1],
  jobType: r[2],
  queueId: r[3],
  tenantId: r[4],
  payload: r[5],
  priority: r[6],
  idempotencyKey: r[7],
  attempt: r[8],
  maxAttempts: r[9],
  timeoutS: r[10],
  deadlineAt: r[11],
  traceId: r[12],
  leaseToken: r[13],
  leaseSeconds: r[14],
  backoffBaseMs: r[15],
  backoffCapMs: r[16],
  cancelRequested: r[17],
  resourceKeyId: r[18],
  isStarted: r[19],
  lastCheckpoint: r[20],
  traceparent: r[21],
});

/**
 * Claims up to `limit` jobs of a pool for one worker, atomically, in one round trip: the
 * `porter_claim` function (packages/core/src/sql/routines/claim.sql, with its fast path when no
 * limit applies to the pool; docs/scheduling.md).
 *
 * Order: per (queue, tenant with claimable work) an index scan of `jobs_claim_idx` in
 * (priority DESC, vft) order with FOR UPDATE SKIP LOCKED — vft being the job's virtual finish
 * time, which interleaves tenants by weight — merged across tenants and queues in the same order.
 * Limits, all counted in the statement: queue concurrency cap, pool cap, tenant running quota
 * (across pools), resource-key concurrency (configured or adaptive; none while throttled), tenant
 * and resource-key start rates (token buckets, debited in the same statement). Count-then-claim is
 * serialized by an advisory lock (global when a cross-pool limit exists, per pool for pool-local
 * caps), so no limit is exceeded at any instant across any number of workers. One fencing token
 * per batch. Claims commit synchronously (20261202000300_durable_claim): the rows reach the worker
 * only once the claim — state, attempt, token — is flushed, so a crash of PostgreSQL cannot forget a
 * claim a worker acts on (that ran jobs twice at one attempt, without a record). A named prepared
 * statement, planned once per connection.
 *
 * `start` (default: all of them): how many of the claimed jobs, in claim order, go into free slots
 * at once and are marked started by the claim itself; the rest are the worker's prefetch, marked
 * started by `startJobs` when they leave its buffer (20261202000301_not_started_attempts).
 * Transition `claim` (sql/transitions.ts; the routine's UPDATE is the statement).
 */
export const claimJobs = async (db: Db, params: ClaimParams): Promise<ClaimedJob[]> => (await claimBatch(db, params)).jobs;

export type ClaimParams = { poolId: string; workerId: string; limit: number; start?: number; now?: Date };

/**
 * A limit whose room a claim used up while claimable work of the pool stayed behind:
 * `queue:<id>` (queue cap), `pool:<id>` (pool cap), `tenant:<id>` (tenant quota),
 * `resource_key:<id>` (the key's concurrency limit). When a job under it finishes, its room frees:
 * claim again then (no notification announces it). Start rates are not bounds (they refill with time).
 */
export type ClaimBound = string;

/** The claim's scope names for a job: a bound of the claim that matches one of them held this job's room. */
export const boundScopesOf = (job: Pick<ClaimedJob, "queueId" | "tenantId" | "resourceKeyId">, poolId: string): ClaimBound[] => {
  const scopes = [`queue:${job.queueId}`, `tenant:${job.tenantId}`, `pool:${poolId}`];
  if (job.resourceKeyId) scopes.push(`resource_key:${job.resourceKeyId}`);
  return scopes;
};

/** A claim's jobs, its bounds, and whether the tenants' shares (not the work) cut it short. */
export type ClaimResult = {
  jobs: ClaimedJob[];
  bounds: ClaimBound[];
  /**
   * The claim came back short because a tenant's scan stopped at its weighted share of the batch
   * (each tenant's scan locks what it reads, so it reads about its share): more may be claimable
   * now, so claim again rather than wait for a notification.
   */
  hasMore: boolean;
};

/**
 * `claimJobs` with the claim's bounds: the limits that cut it short with work left behind
 * (`ClaimBound`; none on the fast path, where no limit applies). The worker's claim loop claims
 * again when a finished job of its own was under one of them.
 */
export const claimBatch = async (db: Db, params: ClaimParams): Promise<ClaimResult> => {
  if (params.limit <= 0) return { jobs: [], bounds: [], hasMore: false };
  const { rows } = await db.query<ClaimRow>({
    name: "porter.claim",
    text: `SELECT ${CLAIM_COLUMNS} FROM porter_claim($1, $2, $3, $4, $5)`,
    values: [params.poolId, params.workerId, params.limit, params.now ?? null, Math.max(0, params.start ?? params.limit)],
    rowMode: "array",
    types: claimTypes,
  });
  const jobRows: ClaimRow[] = [];
  const bounds: ClaimBound[] = [];
  let hasMore = false;
  for (const r of rows) {
    if (r[BOUND_AT] === null) jobRows.push(r);
    else if (r[BOUND_AT] === "more") hasMore = true;
    else bounds.push(r[BOUND_AT]);
  }
  return { jobs: inClaimOrder(jobRows, CLAIM_ORDER_AT).map(toClaimedJob), bounds, hasMore };
};
