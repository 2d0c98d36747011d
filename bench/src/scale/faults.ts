// Point 2: a partition and a restart under load, on a fleet of three hosts running diag.effect jobs
// (each applies one effect through ctx.effect, so a duplicate is visible in diag_effects).
// Partition: the link of the host holding the maintenance leadership (the hardest case: its session
// lock must be released by the server before anyone rescues) goes down mid-run; its leases expire,
// the others rescue its jobs; when the link returns its late results are refused by fencing.
// Restart: `pg_ctl restart -m immediate` mid-run; every host must recover by itself.
import { enqueueJobs } from "@porter/core";
import type { ScaleDatabase } from "./database";
import type { WorkerProc } from "./fleet";
import { type Host, setLink } from "./netns";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const TENANTS = ["tenant_A", "tenant_B", "tenant_C"];

export type Check = { check: string; result: string; ok: boolean };

const enqueueEffects = async (database: ScaleDatabase, tag: string, jobs: number, ms: number) => {
  for (let k = 0; k < jobs; k += 500) {
    await enqueueJobs(
      database.db,
      Array.from({ length: Math.min(500, jobs - k) }, (_, i) => ({
        job_type: "diag.effect",
        tenant_id: TENANTS[(k + i) % 3]!,
        idempotency_key: `${tag}-${k + i}`,
        payload: { key: `${tag}-${k + i}`, ms },
      })),
    );
  }
};

/** Waits until no job of `tag` is live, or `timeoutMs`. */
const waitDrained = async (database: ScaleDatabase, tag: string, timeoutMs: number): Promise<boolean> => {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const { rows } = await database.db
      .query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE idempotency_key LIKE $1`, [`${tag}-%`])
      .catch(() => ({ rows: [{ n: -1 }] }));
    if (rows[0]?.n === 0) return true;
    await sleep(250);
  }
  return false;
};

/** Succeeded / not succeeded / missing jobs, effects applied more than once, attempts beyond the first. */
const outcome = async (database: ScaleDatabase, tag: string, jobs: number) => {
  const { rows } = await database.db.query<{ succeeded: number; other: number; twice: number; missing_effects: number; retried: number; expired: number }>(
    `SELECT (SELECT count(*)::int FROM finished_jobs WHERE idempotency_key LIKE $1 AND state = 'SUCCEEDED') AS succeeded,
            (SELECT count(*)::int FROM finished_jobs WHERE idempotency_key LIKE $1 AND state <> 'SUCCEEDED') AS other,
            (SELECT count(*)::int FROM diag_effects WHERE key LIKE $1 AND applied > 1) AS twice,
            $2::int - (SELECT count(*)::int FROM diag_effects WHERE key LIKE $1) AS missing_effects,
            (SELECT count(*)::int FROM finished_jobs WHERE idempotency_key LIKE $1 AND attempt > 1) AS retried,
            (SELECT count(*)::int FROM job_attempts a JOIN finished_jobs f USING (job_id)
              WHERE f.idempotency_key LIKE $1 AND a.outcome IN ('lease_expired', 'not_started')) AS expired`,
    [`${tag}-%`, jobs],
  );
  return rows[0]!;
};

/** Which host holds the maintenance leadership now (its session advisory lock's client address). */
const leaderHost = async (database: ScaleDatabase, hosts: Host[]): Promise<Host | undefined> => {
  const { rows } = await database.db.query<{ addr: string }>(
    `SELECT host(a.client_addr) AS addr FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = 'porter-worker-maintenance'`,
  );
  return hosts.find((h) => h.address === rows[0]?.addr);
};

/** Results the completer wrote and PostgreSQL refused because the lease had moved on (completer.ts's warning). */
const refusedLate = (procs: WorkerProc[], from: number[]) =>
  procs
    .flatMap((p, i) => p.lines.slice(from[i] ?? 0))
    .filter((l) => l.msg === "results refused: the lease is no longer held by this worker")
    .reduce((n, l) => n + ((l.jobRowIds as unknown[] | undefined)?.length ?? 1), 0);

export const runPartition = async (
  database: ScaleDatabase,
  hosts: Host[],
  procs: WorkerProc[],
  options: { jobs: number; ms: number; downMs: number; progress: (line: string) => void },
): Promise<Check[]> => {
  const tag = "partition";
  let victim: Host | undefined;
  for (let i = 0; i < 40 && !victim; i++) {
    victim = await leaderHost(database, hosts);
    if (!victim) await sleep(250);
  }
  victim ??= hosts[0]!;
  const wasLeader = (await leaderHost(database, hosts)) === victim;
  const onVictim = procs.filter((p) => p.host === victim);
  const cutAt = Date.now();
  await enqueueEffects(database, tag, options.jobs, options.ms);
  await sleep(2_000);
  const { rows: held } = await database.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM jobs WHERE state = 'RUNNING' AND lease_owner = ANY($1) AND idempotency_key LIKE $2`,
    [onVictim.map((p) => p.workerId), `${tag}-%`],
  );
  const linesAtCut = onVictim.map((p) => p.lines.length);
  setLink(victim, "down");
  const downAt = Date.now();
  options.progress(`partition: ${victim.veth} down (${victim.ns}${wasLeader ? ", the maintenance leader" : ""}, ${held[0]!.n} jobs of the run held there)`);
  await sleep(options.downMs);
  setLink(victim, "up");
  options.progress(`partition: ${victim.veth} up after ${Date.now() - downAt} ms`);
  const drained = await waitDrained(database, tag, 90_000);
  // The victim's results still in flight arrive now, over connections that come back: give them time.
  await sleep(8_000);
  const o = await outcome(database, tag, options.jobs);
  const { rows: rescued } = await database.db.query<{ n: number; by_others: number }>(
    `SELECT count(DISTINCT a.job_id)::int AS n,
            count(DISTINCT f.job_id) FILTER (WHERE f.last_worker <> ALL($2))::int AS by_others
       FROM job_attempts a JOIN finished_jobs f USING (job_id)
      WHERE f.idempotency_key LIKE $1 AND a.worker_id = ANY($2) AND f.attempt > 1`,
    [`${tag}-%`, onVictim.map((p) => p.workerId)],
  );
  const refused = refusedLate(onVictim, linesAtCut);
  const exited = procs.filter((p) => p.exit !== undefined).length;
  return [
    {
      check: `partition: link of ${victim.ns} down ${(options.downMs / 1000).toFixed(0)} s${wasLeader ? " (it held the maintenance leadership)" : ""}`,
      result: `${held[0]!.n} jobs running there at the cut`,
      ok: true,
    },
    {
      check: "partition: every job finished (none lost)",
      result: `${o.succeeded}/${options.jobs} SUCCEEDED, ${o.other} other, drained: ${drained}`,
      ok: drained && o.succeeded === options.jobs,
    },
    {
      check: "partition: the cut host's jobs rescued by the other hosts",
      result: `${rescued[0]!.by_others} of ${rescued[0]!.n} attempted there finished elsewhere; ${o.expired} attempts ended by lease expiry`,
      ok: rescued[0]!.by_others > 0,
    },
    {
      check: "partition: no effect applied twice (diag_effects.applied > 1)",
      result: `${o.twice} twice, ${o.missing_effects} missing`,
      ok: o.twice === 0 && o.missing_effects === 0,
    },
    { check: "partition: late results refused by fencing after the link returned", result: `${refused}`, ok: true },
    { check: "partition: worker processes that exited", result: `${exited} of ${procs.length}`, ok: exited === 0 },
    { check: "partition: whole run", result: `${((Date.now() - cutAt) / 1000).toFixed(1)} s`, ok: true },
  ];
};

export const runRestart = async (
  database: ScaleDatabase,
  hosts: Host[],
  procs: WorkerProc[],
  options: { jobs: number; ms: number; progress: (line: string) => void },
): Promise<Check[]> => {
  const tag = "restart";
  await enqueueEffects(database, tag, options.jobs, options.ms);
  await sleep(1_500);
  const began = Date.now();
  await database.cluster.restartImmediate();
  const backAfterMs = Date.now() - began;
  const restartedAt = new Date(Date.now());
  options.progress(`restart: PostgreSQL restarted (immediate), accepting connections after ${backAfterMs} ms`);
  const drained = await waitDrained(database, tag, 120_000);
  await sleep(2_000);
  const o = await outcome(database, tag, options.jobs);
  const { rows: after } = await database.db.query<{ worker_id: string }>(
    `SELECT DISTINCT worker_id FROM job_attempts WHERE finished_at > $1 AND worker_id = ANY($2)`,
    [restartedAt, procs.map((p) => p.workerId)],
  );
  const recovered = new Set(procs.filter((p) => after.some((a) => a.worker_id === p.workerId)).map((p) => p.host.ns));
  const exited = procs.filter((p) => p.exit !== undefined).length;
  return [
    { check: "restart: pg_ctl restart -m immediate mid-run", result: `server back after ${backAfterMs} ms`, ok: true },
    {
      check: "restart: every job finished (none lost)",
      result: `${o.succeeded}/${options.jobs} SUCCEEDED, ${o.other} other, drained: ${drained}`,
      ok: drained && o.succeeded === options.jobs,
    },
    { check: "restart: no effect applied twice", result: `${o.twice} twice, ${o.missing_effects} missing`, ok: o.twice === 0 && o.missing_effects === 0 },
    {
      check: "restart: hosts that ran jobs again after the restart, on their own",
      result: `${recovered.size} of ${hosts.length}`,
      ok: recovered.size === hosts.length,
    },
    { check: "restart: worker processes that exited", result: `${exited} of ${procs.length}`, ok: exited === 0 },
  ];
};
