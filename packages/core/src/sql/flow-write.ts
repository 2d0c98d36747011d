/**
 * SQL fragments that write the flow rollups (docs/observability.md "Rollups") from inside the
 * statements that already touch each job: one more data-modifying CTE, an aggregated
 * `INSERT … SELECT … GROUP BY … ON CONFLICT DO UPDATE` that adds to the row of (minute, queue, job
 * type, tenant, shard). One row per group per statement, never one per job; the rows are inserted
 * in key order, so two statements upserting several groups lock them in the same order (no
 * deadlock between them).
 *
 * The shard is the writing connection's `pg_backend_pid() % 16`: a worker's claim and its
 * completer's ack run on different connections, so they rarely wait on each other's row lock inside
 * their transactions (keyed by worker id they would share it). Readers sum over shards.
 *
 * The claim routine (routines/claim.sql) writes the same rows by hand: keep the two in step.
 */

/** Shards per group (see the file comment). */
export const FLOW_SHARDS = 16;
/** The last histogram bucket: ≥ 2^27 ms (~37 h). Bucket 0 is < 1 ms, bucket k is [2^(k-1), 2^k) ms. */
export const FLOW_LAST_BUCKET = 28;

/** The histogram bucket of a duration in milliseconds (an SQL expression over `ms`). */
export const bucketSql = (ms: string): string =>
  `(CASE WHEN (${ms}) < 1 THEN 0 ELSE least(${FLOW_LAST_BUCKET}, floor(ln(${ms}) / ln(2.0::float8))::int + 1) END)::int`;

/** The counters of `flow_rollups` a writer may add to. */
export type FlowCounter =
  | "arrivals"
  | "starts"
  | "succeeded"
  | "retried"
  | "dead"
  | "cancelled"
  | "expired"
  | "lease_expiries"
  | "throttles"
  | "wait_ms_sum"
  | "runs"
  | "run_ms_sum";

/** A histogram a writer adds: the duration in ms of each source row (null: the row has none). */
export type FlowHistograms = { wait_hist?: string; run_hist?: string };

/** Ends every flow upsert's text (the burn-down A/B, bench/src/probe/claim-ab.ts, finds the CTEs by it). */
export const FLOW_END = "/* flow */";
const SHARD = `(pg_backend_pid() % ${FLOW_SHARDS})::int`;
const KEY = "grain, at, queue_id, job_type, tenant_id, shard";
const BUCKETS = Array.from({ length: FLOW_LAST_BUCKET + 1 }, (_, b) => b);

/** The per-group histogram array of the bucket column `b`: element i counts bucket i − 1. */
const histArraySql = (b: string): string => `ARRAY[${BUCKETS.map((k) => `count(*) FILTER (WHERE s.${b} = ${k})`).join(", ")}]`;

/** Element-wise sum of two histogram arrays (either may be empty): for ON CONFLICT DO UPDATE and the fold. */
export const histAddSql = (a: string, b: string): string =>
  `ARRAY(SELECT coalesce(u.a, 0) + coalesce(u.b, 0) FROM unnest(${a}, ${b}) WITH ORDINALITY AS u(a, b, i) ORDER BY u.i)`;

/**
 * Adds to `flow_rollups` from a row source `s` with columns queue_id, job_type, tenant_id: `at` is
 * the time expression (truncated to its minute; it may read the row), each counter an aggregate
 * over the source (`count(*)`, `count(*) FILTER (WHERE …)`, `sum(…)`), each histogram the
 * duration in ms of a row (its bucket computed once per row). One row per group and statement:
 * counters and histograms in one upsert.
 */
export const flowUpsertSql = (source: string, at: string, counters: Partial<Record<FlowCounter, string>>, histograms: FlowHistograms = {}): string => {
  const names = Object.keys(counters) as FlowCounter[];
  const hists = (Object.keys(histograms) as Array<keyof FlowHistograms>).filter((h) => histograms[h] !== undefined);
  const buckets = hists.map((h) => `, ${bucketSql(`s_ms.${h}_ms`)} AS ${h}_b`).join("");
  const msCols = hists.map((h) => `${histograms[h]} AS ${h}_ms`).join(", ");
  // With histograms, the source is wrapped once: each row's durations, then their buckets.
  const from = hists.length ? `(SELECT s.*, s_ms.*${buckets} FROM ${source} s CROSS JOIN LATERAL (SELECT ${msCols}) s_ms) s` : `${source} s`;
  const cols = [...names, ...hists];
  const values = [...names.map((n) => counters[n]!), ...hists.map((h) => histArraySql(`${h}_b`))];
  const sets = [
    ...names.map((n) => `${n} = flow_rollups.${n} + EXCLUDED.${n}`),
    ...hists.map((h) => `${h} = ${histAddSql(`flow_rollups.${h}`, `EXCLUDED.${h}`)}`),
  ];
  return `INSERT INTO flow_rollups (${KEY}, ${cols.join(", ")})
    SELECT 1, date_trunc('minute', ${at}), s.queue_id, s.job_type, s.tenant_id, ${SHARD}, ${values.join(", ")}
      FROM ${from}
     GROUP BY 2, 3, 4, 5
     ORDER BY 2, 3, 4, 5
    ON CONFLICT (${KEY}) DO UPDATE SET ${sets.join(", ")} ${FLOW_END}`;
};

/** Adds retries by error code (`code`, an SQL expression over `s`) to `flow_retry_codes`. */
export const flowRetryCodesSql = (source: string, at: string, code: string): string => `INSERT INTO flow_retry_codes (${KEY}, code, n)
    SELECT 1, date_trunc('minute', ${at}), c.queue_id, c.job_type, c.tenant_id, ${SHARD}, c.code, count(*)
      FROM (SELECT s.queue_id, s.job_type, s.tenant_id, coalesce(${code}, 'UNKNOWN') AS code FROM ${source} s) c
     GROUP BY c.queue_id, c.job_type, c.tenant_id, c.code
     ORDER BY c.queue_id, c.job_type, c.tenant_id, c.code
    ON CONFLICT (${KEY}, code) DO UPDATE SET n = flow_retry_codes.n + EXCLUDED.n ${FLOW_END}`;

/** Milliseconds between two timestamptz SQL expressions. */
export const msBetween = (from: string, to: string): string => `(extract(epoch FROM (${to}) - (${from})) * 1000)::float8`;
