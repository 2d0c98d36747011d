/**
 * SQL fragments that write the flow rollups (docs/observability.md "Rollups") from inside the
 * statements that already touch each job: one more data-modifying CTE, an aggregated
 * `INSERT … SELECT … GROUP BY … ON CONFLICT DO UPDATE` that adds to the row of (minute, queue, job
 * type, tenant, shard). One row per group per statement, never one per job; the rows are inserted
 * in key order, so two statements upserting several groups lock them in the same order (no
 * deadlock between them).
 *
 * The shard is the writing connection's: `pg_backend_pid() % 8` for the claim (routines/claim.sql),
 * `8 + pg_backend_pid() % 8` for every other writer (these helpers). A claim — a worker's serial hot
 * path — never waits on an ack's, a failure's or a producer's row lock (they hold it until their
 * synchronous commit), and writers of one class on different connections rarely share a row.
 * Readers sum over shards.
 *
 * The claim routine (routines/claim.sql) writes the same rows by hand: keep the two in step.
 */

/** Shards per group (see the file comment): the claim writes the first half, every other writer the second. */
export const FLOW_SHARDS = 16;
/** The last histogram bucket: ≥ 2^27 ms (~37 h). Bucket 0 is < 1 ms, bucket k is [2^(k-1), 2^k) ms. */
export const FLOW_LAST_BUCKET = 28;

/**
 * The histogram bucket of a duration in milliseconds (an SQL expression over `ms`, evaluated once:
 * below 1 ms — negative included — `greatest` lifts it to 0.5 ms, bucket 0). A null `ms` is bucket 0.
 */
export const bucketSql = (ms: string): string => `least(${FLOW_LAST_BUCKET}, floor(ln(greatest(${ms}, 0.5)) / ln(2.0::float8))::int + 1)`;

/** The counters of `flow_rollups` a writer may add to. */
export const FLOW_COUNTERS = [
  "arrivals",
  "starts",
  "succeeded",
  "retried",
  "dead",
  "cancelled",
  "expired",
  "lease_expiries",
  "throttles",
  "wait_ms_sum",
  "runs",
  "run_ms_sum",
] as const;
export type FlowCounter = (typeof FLOW_COUNTERS)[number];

const SHARD = `(${FLOW_SHARDS / 2} + pg_backend_pid() % ${FLOW_SHARDS / 2})::int`;
const GROUP = (a: string) => `${a}.queue_id, ${a}.job_type, ${a}.tenant_id`;
const KEY = "grain, at, queue_id, job_type, tenant_id, shard";

/**
 * Adds to `flow_rollups` from a row source `s` with columns queue_id, job_type, tenant_id: `at` is
 * the time expression (truncated to its minute; it may read the row), each counter an aggregate over the source
 * (`count(*)`, `count(*) FILTER (WHERE …)`, `sum(…)`).
 */
export const flowUpsertSql = (source: string, at: string, counters: Partial<Record<FlowCounter, string>>): string => {
  const names = Object.keys(counters) as FlowCounter[];
  return `INSERT INTO flow_rollups (${KEY}, ${names.join(", ")})
    SELECT 1, date_trunc('minute', ${at}), ${GROUP("s")}, ${SHARD}, ${names.map((n) => counters[n]).join(", ")}
      FROM ${source} s
     GROUP BY 2, 3, 4, 5
     ORDER BY 2, 3, 4, 5
    ON CONFLICT (${KEY}) DO UPDATE SET ${names.map((n) => `${n} = flow_rollups.${n} + EXCLUDED.${n}`).join(", ")}`;
};

/**
 * One histogram's rows for {@link flowHistogramsSql}: durations `ms` (an SQL expression over the
 * source's row `s`); with `nullable`, rows where `ms` is null are left out (else they count in bucket 0).
 */
export type FlowHistogramPart = { source: string; kind: "w" | "r"; ms: string; nullable?: boolean; bucket?: undefined; n?: undefined };
/**
 * Histogram rows already bucketed, each counting `n` attempts: `bucket` and `n` are SQL expressions
 * over the source's row `s` (see {@link flowEndedSql}).
 */
export type FlowHistogramBuckets = { source: string; kind: "w" | "r"; bucket: string; n: string; ms?: undefined; nullable?: undefined };

/**
 * Adds histograms of durations to `flow_histograms`, several kinds in ONE upsert (the cost is per
 * statement, not per row: docs/performance.md "Flow rollups").
 */
export const flowHistogramsSql = (at: string, parts: FlowHistogramPart[] | FlowHistogramBuckets[]): string => {
  const weighted = parts.some((p) => p.n !== undefined);
  return `INSERT INTO flow_histograms (${KEY}, kind, bucket, n)
    SELECT 1, date_trunc('minute', ${at}), h.queue_id, h.job_type, h.tenant_id, ${SHARD}, h.kind, h.bucket, ${weighted ? "sum(h.n)" : "count(*)"}
      FROM (${parts
        .map((p) =>
          p.bucket !== undefined
            ? `SELECT ${GROUP("s")}, '${p.kind}'::text AS kind, ${p.bucket} AS bucket, ${p.n} AS n FROM ${p.source} s`
            : `SELECT ${GROUP("s")}, '${p.kind}'::text AS kind, ${bucketSql(p.ms)} AS bucket FROM ${p.source} s${p.nullable ? ` WHERE (${p.ms}) IS NOT NULL` : ""}`,
        )
        .join(" UNION ALL ")}) h
     GROUP BY h.queue_id, h.job_type, h.tenant_id, h.kind, h.bucket
     ORDER BY h.queue_id, h.job_type, h.tenant_id, h.kind, h.bucket
    ON CONFLICT (${KEY}, kind, bucket) DO UPDATE SET n = flow_histograms.n + EXCLUDED.n`;
};

/**
 * The rollup and both histograms of attempts that ended, from ONE pass over `source`: a CTE
 * `${name}_g` groups its rows by (queue, job type, tenant, wait bucket, run bucket) — a handful of
 * rows for a batch of hundreds — and the two upserts, CTEs `${name}` and `${name}_hist`, read
 * those. Written separately, the rollup sorted every row of the source and the histograms every
 * row twice (docs/performance.md "The ack, counted"). `wait` and `run` are SQL expressions over the
 * source's row `s` (never null: a null counts in bucket 0, as {@link flowHistogramsSql} counts it);
 * `counters` are the rollup's, as SQL over the groups' columns `s.n` (attempts), `s.w` and `s.r`
 * (their summed wait and run). Returns the three CTEs' text, `${name}_g AS (…), …` without a
 * leading comma.
 */
export const flowEndedSql = (
  name: string,
  source: string,
  at: string,
  ms: { wait: string; run: string },
  counters: Partial<Record<FlowCounter, string>>,
): string => `${name}_g AS (
       SELECT e.queue_id, e.job_type, e.tenant_id, ${bucketSql("e.w")} AS wb, ${bucketSql("e.r")} AS rb,
              count(*) AS n, sum(e.w) AS w, sum(e.r) AS r
         FROM (SELECT ${GROUP("s")}, ${ms.wait} AS w, ${ms.run} AS r FROM ${source} s) e
        GROUP BY 1, 2, 3, 4, 5
     ), ${name} AS (${flowUpsertSql(`${name}_g`, at, counters)}
     ), ${name}_hist AS (${flowHistogramsSql(at, [
       { source: `${name}_g`, kind: "w", bucket: "s.wb", n: "s.n" },
       { source: `${name}_g`, kind: "r", bucket: "s.rb", n: "s.n" },
     ])})`;

/** Adds a histogram of `ms` (an SQL expression over the source's row `s`; null: left out) to `flow_histograms`. */
export const flowHistogramSql = (source: string, at: string, kind: "w" | "r", ms: string): string =>
  flowHistogramsSql(at, [{ source, kind, ms, nullable: true }]);

/**
 * The wait of an attempt (ms): its claim − the time the job became ready (enqueue, not_before,
 * retry or rescue: `run_at`, never before `created_at`). `readyAt` is that time as the claim saw it
 * (pass it when the statement rewrites `run_at`). Its sum (`wait_ms_sum`) and its histogram are
 * written where the attempt ends (ack, fail, rescue, hand-back), in the statement that already
 * writes there: the two cover the same attempts (a Prometheus histogram's _sum and _count).
 */
export const waitMsSql = (readyAt = "greatest(s.run_at, s.created_at)"): string => msBetween(readyAt, "s.claimed_at");

/** SQL for the time a RUNNING row `j` became ready, read from the row version before this statement's update. */
export const readyAtBeforeSql = "(SELECT greatest(o.run_at, o.created_at) FROM jobs o WHERE o.id = j.id)";

/** Adds retries by error code (`code`, an SQL expression over `s`) to `flow_retry_codes`. */
export const flowRetryCodesSql = (source: string, at: string, code: string): string => `INSERT INTO flow_retry_codes (${KEY}, code, n)
    SELECT 1, date_trunc('minute', ${at}), c.queue_id, c.job_type, c.tenant_id, ${SHARD}, c.code, count(*)
      FROM (SELECT ${GROUP("s")}, coalesce(${code}, 'UNKNOWN') AS code FROM ${source} s) c
     GROUP BY c.queue_id, c.job_type, c.tenant_id, c.code
     ORDER BY c.queue_id, c.job_type, c.tenant_id, c.code
    ON CONFLICT (${KEY}, code) DO UPDATE SET n = flow_retry_codes.n + EXCLUDED.n`;

/**
 * Milliseconds between two timestamptz SQL expressions, in float8 arithmetic: `date_part` returns
 * float8 where `extract` returns numeric (PostgreSQL 14+), whose arithmetic cost several times as
 * much per row (docs/performance.md "Flow rollups"). Microsecond timestamps fit a float8 exactly.
 */
export const msBetween = (from: string, to: string): string => `(date_part('epoch', (${to}) - (${from})) * 1000)`;
