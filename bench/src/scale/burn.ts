// One scale step: a fleet on N hosts burns down a preloaded backlog of the demo's background pool
// (four queues, two capped; tenants A/B/C weighted 1/1/2). The jobs are enqueued with a common
// not_before, so every host starts on a full backlog at once; meanwhile the harness samples, over
// its own connection, RUNNING counts per queue and tenant, the server's connections and wait
// events; afterwards it reads latencies, duplicates and fair shares from the finished rows.
import { enqueueJobs } from "@porter/core";
import { durationOf, mix, tenantOf } from "../realistic-mix";
import { pgbouncerClients, type ScaleDatabase } from "./database";
import { quantileOfBuckets, scrapeClaimBuckets, type WorkerProc } from "./fleet";

/** The demo's background pool (apps/porter/src/seed/demo.ts) and this workload's share of each type. */
const TYPES = [
  { type: "document.parse", queue: "ks.background", share: 3 },
  { type: "embed.chunks", queue: "ks.background", share: 3 },
  { type: "email.campaign", queue: "email.bulk", share: 1 },
  { type: "harvester.sync", queue: "harvester.sync", share: 1 },
] as const;
const SLOTS = TYPES.flatMap((t) => Array.from({ length: t.share }, () => t));
/** The demo's caps in pool background. */
export const CAPS: Record<string, number> = { "email.bulk": 8, "harvester.sync": 4 };
const BACKGROUND_QUEUES = ["ks.background", "email.bulk", "harvester.sync", "diag"];

export type StepResult = {
  label: string;
  hosts: number;
  processes: number;
  viaPgBouncer: boolean;
  jobs: number;
  /** Peak client connections PostgreSQL served during the phase (pg_stat_activity, the harness's own excluded). */
  serverConnections: number;
  /** Distinct client addresses among them. */
  clientAddresses: number;
  /** PgBouncer's client connections (the workers' pools), when the step runs through it. */
  pgbouncerClients: number | undefined;
  jobsPerSecond: number;
  startP99Ms: number;
  claimP99Ms: number;
  dbCpuCores: number;
  dbCpuMsPerJob: number;
  caps: { held: boolean; peak: Record<string, number> };
  fair: { held: boolean; cShareMin: number; cShareMax: number; windows: number };
  duplicates: number;
  lost: number;
  samples: number;
  /** How long the preload overran the common release (0: it did not). */
  overrunMs: number;
  waits: Array<{ event: string; n: number }>;
  statements: Array<{ query: string; calls: number; totalMs: number; meanMs: number }>;
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Preloads `jobs` jobs (tag `tag` in the idempotency keys) released at one instant, lets `procs` burn them down, and measures. */
export const runStep = async (
  database: ScaleDatabase,
  procs: WorkerProc[],
  options: {
    label: string;
    hosts: number;
    jobs: number;
    handlerBaseMs: number;
    tag: string;
    viaPgBouncer: boolean;
    pgbouncerAdminUrl?: string;
    timeoutMs: number;
  },
): Promise<StepResult> => {
  const { db } = database;
  await db.query("SELECT pg_stat_statements_reset()");
  const releaseAt = new Date(Date.now() + 4_000 + options.jobs * 1.5);
  const batches: Array<Parameters<typeof enqueueJobs>[1]> = [];
  for (let k = 0; k < options.jobs; k += 500) {
    batches.push(
      Array.from({ length: Math.min(500, options.jobs - k) }, (_, i) => {
        const n = k + i;
        const t = SLOTS[mix(n) % SLOTS.length]!;
        return {
          job_type: t.type,
          tenant_id: tenantOf(n).id,
          idempotency_key: `${options.tag}-${n}`,
          payload: { source_ref: `bench://${options.tag}/${n}`, ms: options.handlerBaseMs + durationOf(n) },
          not_before: releaseAt.toISOString(),
        };
      }),
    );
  }
  for (const batch of batches) await enqueueJobs(db, batch);
  // On a loaded machine the preload may overrun the release: the first jobs then start early, which
  // the throughput over the middle of the finishes tolerates.
  const overrunMs = Date.now() - releaseAt.getTime();
  const claimBefore = await Promise.all(procs.map(scrapeClaimBuckets));
  await sleep(Math.max(0, releaseAt.getTime() - Date.now()));
  const cpuBefore = database.cpuSeconds();
  const t0 = Date.now();

  const peak: Record<string, number> = {};
  const waits = new Map<string, number>();
  let serverConnections = 0;
  let clientAddresses = 0;
  let pooledClients: number | undefined;
  let samples = 0;
  const deadline = t0 + options.timeoutMs;
  for (;;) {
    const [running, activity] = await Promise.all([
      db.query<{ queue_id: string; n: number; live: number }>(
        `SELECT queue_id, count(*) FILTER (WHERE state = 'RUNNING')::int AS n, count(*)::int AS live
           FROM jobs WHERE queue_id = ANY($1) AND state IN ('READY', 'RUNNING', 'RETRY_WAIT') GROUP BY queue_id`,
        [BACKGROUND_QUEUES],
      ),
      db.query<{ connections: number; addresses: number; waits: Array<{ e: string; n: number }> | null }>(
        `SELECT count(*)::int AS connections, count(DISTINCT client_addr)::int AS addresses,
                (SELECT json_agg(json_build_object('e', e, 'n', n)) FROM (
                   SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') AS e, count(*)::int AS n
                     FROM pg_stat_activity
                    WHERE backend_type = 'client backend' AND state = 'active' AND application_name <> 'porter-scale' GROUP BY 1) w) AS waits
           FROM pg_stat_activity WHERE backend_type = 'client backend' AND application_name <> 'porter-scale'`,
      ),
    ]);
    samples += 1;
    for (const row of running.rows) peak[row.queue_id] = Math.max(peak[row.queue_id] ?? 0, row.n);
    const a = activity.rows[0]!;
    serverConnections = Math.max(serverConnections, a.connections);
    clientAddresses = Math.max(clientAddresses, a.addresses);
    for (const w of a.waits ?? []) waits.set(w.e, (waits.get(w.e) ?? 0) + w.n);
    if (options.pgbouncerAdminUrl && samples % 8 === 1) {
      const pooled = await pgbouncerClients(options.pgbouncerAdminUrl).catch(() => undefined);
      if (pooled) pooledClients = Math.max(pooledClients ?? 0, pooled.clients);
    }
    if (running.rows.reduce((s, r) => s + r.live, 0) === 0 && Date.now() > t0 + 500) break;
    if (Date.now() > deadline) throw new Error(`step ${options.label}: the backlog was not burnt down within ${options.timeoutMs} ms`);
    await sleep(200);
  }
  const cpu = database.cpuSeconds() - cpuBefore;
  const claimAfter = await Promise.all(procs.map(scrapeClaimBuckets));

  const like = `${options.tag}-%`;
  // Successful attempts have no job_attempts row (the finished row holds the claim): a job claimed
  // twice shows as attempt > 1 or as an attempt row. Throughput: the uncapped queue's (ks.background,
  // ¾ of the jobs) over the middle 80 % of its finishes — the capped queues run at their caps by
  // design, and the first claims' ramp is left out.
  const { rows: stats } = await db.query<{ done: number; succeeded: number; uncapped: number; mid_s: number; claim_p99_ms: number; duplicates: number }>(
    `WITH f AS (SELECT job_id, queue_id, state, attempt, run_at, claimed_at, finished_at FROM finished_jobs WHERE idempotency_key LIKE $1)
     SELECT (SELECT count(*)::int FROM f) AS done,
            (SELECT count(*)::int FROM f WHERE state = 'SUCCEEDED') AS succeeded,
            (SELECT count(*)::int FROM f WHERE queue_id = 'ks.background') AS uncapped,
            (SELECT extract(epoch FROM percentile_disc(0.9) WITHIN GROUP (ORDER BY finished_at) - percentile_disc(0.1) WITHIN GROUP (ORDER BY finished_at))::float8
               FROM f WHERE queue_id = 'ks.background') AS mid_s,
            (SELECT (1000 * extract(epoch FROM percentile_cont(0.99) WITHIN GROUP (ORDER BY claimed_at - run_at)))::float8 FROM f) AS claim_p99_ms,
            (SELECT count(*)::int FROM f WHERE attempt > 1) + (SELECT count(*)::int FROM job_attempts a JOIN f USING (job_id)) AS duplicates`,
    [like],
  );
  const s = stats[0]!;
  // Fair share: in every 500 ms window (by claim time) of the uncapped queue before the first tenant
  // ran out of backlog there, tenant C (weight 2 of 4) should take about half of the claims.
  const { rows: windows } = await db.query<{ w: number; c: number; total: number }>(
    `WITH f AS (SELECT tenant_id, claimed_at FROM finished_jobs WHERE idempotency_key LIKE $1 AND queue_id = 'ks.background'),
          cut AS (SELECT min(last) AS until, (SELECT min(claimed_at) FROM f) AS first FROM (SELECT max(claimed_at) AS last FROM f GROUP BY tenant_id) x)
     SELECT floor(extract(epoch FROM f.claimed_at - cut.first) / 0.5)::int AS w,
            count(*) FILTER (WHERE tenant_id = 'tenant_C')::int AS c, count(*)::int AS total
       FROM f, cut WHERE f.claimed_at < cut.until GROUP BY 1 HAVING count(*) >= 40 ORDER BY 1`,
    [like],
  );
  const shares = windows.map((w) => w.c / w.total);
  const { rows: statements } = await db.query<{ query: string; calls: number; total_ms: number; mean_ms: number }>(
    `SELECT regexp_replace(left(query, 200), '\\s+', ' ', 'g') AS query, calls::int, total_exec_time::float8 AS total_ms, mean_exec_time::float8 AS mean_ms
       FROM pg_stat_statements WHERE query NOT ILIKE '%pg_stat%' ORDER BY total_exec_time DESC LIMIT 5`,
  );
  return {
    label: options.label,
    hosts: options.hosts,
    processes: procs.length,
    viaPgBouncer: options.viaPgBouncer,
    jobs: options.jobs,
    serverConnections,
    clientAddresses,
    pgbouncerClients: pooledClients,
    jobsPerSecond: (0.8 * s.uncapped) / Math.max(0.001, s.mid_s),
    startP99Ms: s.claim_p99_ms,
    claimP99Ms: 1000 * quantileOfBuckets(claimBefore, claimAfter, 0.99),
    dbCpuCores: cpu / Math.max(0.001, (Date.now() - t0) / 1000),
    dbCpuMsPerJob: (1000 * cpu) / Math.max(1, s.done),
    caps: { held: Object.entries(CAPS).every(([q, cap]) => (peak[q] ?? 0) <= cap), peak },
    fair: { held: shares.every((x) => x >= 0.35 && x <= 0.65), cShareMin: Math.min(...shares), cShareMax: Math.max(...shares), windows: shares.length },
    duplicates: s.duplicates + (s.done - s.succeeded),
    lost: options.jobs - s.done,
    samples,
    overrunMs: Math.max(0, overrunMs),
    waits: [...waits.entries()].map(([event, n]) => ({ event, n })).sort((x, y) => y.n - x.n),
    statements: statements.map((r) => ({ query: r.query, calls: r.calls, totalMs: r.total_ms, meanMs: r.mean_ms })),
  };
};
