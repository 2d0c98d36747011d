// What a chaos run must leave behind, checked against the database and the workers' own logs.
// Each check is one row of the report: expected, observed, and evidence (ids, log lines) when it
// fails. Run after the fleet settled, while the workers still run.
import { ZJobError } from "@porter/contracts";
import type pg from "pg";
import type { FleetMember, ListenKill, WorkerFleet } from "./fleet";
import type { JobKind } from "./producers";
import type { Restart } from "./run-chaos";

/** One invariant's outcome. */
export type Check = { name: string; expected: string; observed: string; isOk: boolean; evidence: string[] };

/**
 * Attempt outcomes that do not count against max_attempts (the attempt counter goes back): a
 * drain's hand-back, and an attempt released before its handler started.
 */
export const UNCOUNTED_OUTCOMES = ["handed_back", "not_started"];

/** No SIGKILL this long after the server is back: the workers that lived through it must recover by themselves. */
export const QUIET_AFTER_RESTART_MS = 5_000;

export type ChaosFacts = {
  db: pg.Pool;
  fleet: WorkerFleet;
  /** job_id → kind of every enqueue acknowledged to the mix producer. */
  acknowledged: Map<string, JobKind>;
  /** order_key → job_id of every COMMIT acknowledged to a transactional producer. */
  committedOrders: Map<string, string>;
  /** The immediate restarts: when each was issued and how long the server was gone. */
  restarts: Restart[];
  listenKills: ListenKill[];
  /** Connection errors on the producers' checked-out clients that nothing of Porter's handled. */
  unhandledClientErrors: string[];
};

type JobFact = {
  job_id: string;
  row_id: string;
  job_type: string;
  payload: Record<string, unknown>;
  state: string;
  attempt: number;
  max_attempts: number;
  error: unknown;
  lease_until: Date | null;
  /** The lease holder of a live job; the worker of the last attempt of a finished one. */
  worker: string | null;
  is_live: boolean;
};

type AttemptFact = { job_id: string; attempt: number; worker_id: string | null; lease_token: string | null; outcome: string; finished_at: Date };

const ids = (list: string[], max = 8) => (list.length > max ? [...list.slice(0, max), `… ${list.length - max} more`] : list);
const check = (name: string, expected: string, observed: string, isOk: boolean, evidence: string[] = []): Check => ({
  name,
  expected,
  observed,
  isOk,
  evidence: isOk ? [] : ids(evidence),
});
const zeroCheck = (name: string, bad: string[], of?: number): Check =>
  check(name, "0", of === undefined ? String(bad.length) : `${bad.length} of ${of}`, bad.length === 0, bad);

/** Runs every invariant; the run passes when all are ok. */
export const checkInvariants = async (facts: ChaosFacts): Promise<Check[]> => {
  const { db } = facts;
  const { rows: jobs } = await db.query<JobFact>(
    `SELECT job_id::text, id::text AS row_id, job_type, payload, state::text, attempt, max_attempts, last_error AS error,
            lease_until, lease_owner AS worker, true AS is_live
       FROM jobs
     UNION ALL
     SELECT job_id::text, id::text, job_type, payload, state::text, attempt, max_attempts, error, NULL, last_worker, false
       FROM finished_jobs`,
  );
  const { rows: attempts } = await db.query<AttemptFact>(
    `SELECT job_id::text, attempt, worker_id, lease_token::text, outcome::text, finished_at FROM job_attempts ORDER BY id`,
  );
  const { rows: effects } = await db.query<{ key: string; applied: number }>(`SELECT key, applied FROM diag_effects`);
  const byJob = new Map(jobs.map((j) => [j.job_id, j]));
  const byRow = new Map(jobs.map((j) => [j.row_id, j]));
  const attemptsOf = new Map<string, AttemptFact[]>();
  for (const a of attempts) attemptsOf.set(a.job_id, [...(attemptsOf.get(a.job_id) ?? []), a]);
  const applied = new Map(effects.map((e) => [e.key, e.applied]));
  const checks: Check[] = [];

  // 1. Nothing acknowledged is lost.
  const lost = [...facts.acknowledged.keys()].filter((id) => !byJob.has(id));
  checks.push(zeroCheck("acknowledged jobs lost", lost, facts.acknowledged.size));

  // 2. The transactional-enqueue crash case: a COMMIT that returned keeps its row and its job.
  const { rows: orders } = await db.query<{ order_key: string; job_id: string }>(`SELECT order_key, job_id::text FROM chaos_orders`);
  const orderRows = new Map(orders.map((o) => [o.order_key, o.job_id]));
  const lostOrders = [...facts.committedOrders.entries()]
    .filter(([key, jobId]) => !orderRows.has(key) || !byJob.has(jobId))
    .map(([key, jobId]) => `${key} (row ${orderRows.has(key) ? "kept" : "LOST"}, job ${jobId} ${byJob.has(jobId) ? "kept" : "LOST"})`);
  checks.push(zeroCheck("committed producer transactions lost (row or job)", lostOrders, facts.committedOrders.size));

  // 3–4. Effects: at most once, and present for every SUCCEEDED effect job.
  const twice = effects.filter((e) => e.applied > 1).map((e) => `${e.key} applied ${e.applied}×`);
  checks.push(zeroCheck("effects applied twice", twice));
  const effectJobs = jobs.filter((j) => j.job_type === "diag.effect");
  const missing = effectJobs
    .filter((j) => j.state === "SUCCEEDED" && (applied.get(String(j.payload.key)) ?? 0) < 1)
    .map((j) => `${j.job_id} key ${String(j.payload.key)}`);
  checks.push(zeroCheck("effects missing for SUCCEEDED effect jobs", missing, effectJobs.filter((j) => j.state === "SUCCEEDED").length));

  // 5–6. Nothing left running on a dead lease; everything ended.
  const { rows: clock } = await db.query<{ now: Date }>(`SELECT clock_timestamp() AS now`);
  const now = clock[0]!.now.getTime();
  const pastLease = jobs.filter((j) => j.state === "RUNNING" && j.lease_until !== null && j.lease_until.getTime() < now);
  checks.push(
    zeroCheck(
      "jobs RUNNING past their lease",
      pastLease.map((j) => `${j.job_id} lease_until ${j.lease_until?.toISOString()}`),
    ),
  );
  const open = jobs.filter((j) => j.is_live);
  checks.push(
    zeroCheck(
      "jobs not terminal",
      open.map((j) => `${j.job_id} ${j.state} attempt ${j.attempt}`),
      jobs.length,
    ),
  );

  // 7. Workers recover by themselves: no exit but the suite's SIGKILLs, a clean drain at the end.
  const exits = facts.fleet.unexpectedExits().map(describeExit);
  checks.push(zeroCheck("worker exits not caused by the suite", exits, facts.fleet.members.length));

  // 7b. The producing process survives too: a checked-out client whose connection dies must not
  // emit an 'error' that nothing of Porter's listens to.
  checks.push(zeroCheck("producer connection errors nothing handled (a crash)", facts.unhandledClientErrors));

  // 8. Every worker that lived through a restart (ready before it, not SIGKILLed until the quiet
  // time after it was over) finished work again after it, before any later SIGKILL.
  const { rows: finishedRows } = await db.query<{ last_worker: string | null; finished_at: Date }>(`SELECT last_worker, finished_at FROM finished_jobs`);
  const finishes = [
    ...attempts.map((a) => ({ workerId: a.worker_id, at: a.finished_at.getTime() })),
    ...finishedRows.map((f) => ({ workerId: f.last_worker, at: f.finished_at.getTime() })),
  ];
  let survivorCount = 0;
  const idle: string[] = [];
  for (const restart of facts.restarts) {
    const backAt = restart.at + restart.ms;
    const survivors = facts.fleet.members.filter(
      (m) =>
        m.readyAt !== undefined
        && m.readyAt < restart.at
        && (m.killedAt === undefined || m.killedAt >= backAt + QUIET_AFTER_RESTART_MS)
        && !facts.fleet.unexpectedExits().includes(m),
    );
    survivorCount += survivors.length;
    for (const m of survivors) {
      if (!finishes.some((f) => f.workerId === m.workerId && f.at > restart.at && f.at <= (m.killedAt ?? Number.POSITIVE_INFINITY))) {
        idle.push(`w${m.index} (${m.workerId}) finished nothing after the restart at ${new Date(restart.at).toISOString()}`);
      }
    }
  }
  checks.push(
    check(
      "workers through the restart that worked again",
      `${survivorCount} of ${survivorCount} (≥ 1)`,
      `${survivorCount - idle.length} of ${survivorCount}`,
      idle.length === 0 && survivorCount > 0,
      idle.length > 0 ? idle : ["no worker lived through a restart: the run proves nothing about recovery"],
    ),
  );

  // 9. A terminated LISTEN connection comes back.
  const notBack = facts.listenKills
    .filter((k) => k.member && k.member.killedAt === undefined)
    .filter((k) => !k.member!.process.logs().some((l) => l.msg === "listener reconnected" && typeof l.time === "number" && l.time >= k.at))
    .map((k) => `w${k.member!.index}: backend ${k.backendPid} terminated, no "listener reconnected" after it`);
  const unknown = facts.listenKills.filter((k) => !k.member).map((k) => `backend ${k.backendPid}: owner process not found`);
  checks.push(zeroCheck("LISTEN connections not re-established", [...notBack, ...unknown], facts.listenKills.length));

  // 10–12. Every attempt recorded, none twice, no token shared by two workers.
  const counted = (j: JobFact) => (attemptsOf.get(j.job_id) ?? []).filter((a) => !UNCOUNTED_OUTCOMES.includes(a.outcome));
  const miscounted = jobs
    .filter((j) => !j.is_live || j.state !== "RUNNING")
    .filter((j) => counted(j).length + (j.state === "SUCCEEDED" ? 1 : 0) !== j.attempt)
    .map((j) => `${j.job_id} ${j.state} attempt ${j.attempt}, ${counted(j).length} attempt row(s)${j.state === "SUCCEEDED" ? " + the successful one" : ""}`);
  checks.push(zeroCheck("jobs whose attempts are not all recorded", miscounted, jobs.length));
  const doubled = jobs.flatMap((j) => {
    const numbers = counted(j).map((a) => a.attempt);
    if (j.state === "SUCCEEDED") numbers.push(j.attempt);
    const dupes = [...new Set(numbers.filter((n, i) => numbers.indexOf(n) !== i))];
    return dupes.map((n) => `${j.job_id} attempt ${n} recorded ${numbers.filter((m) => m === n).length}×`);
  });
  checks.push(zeroCheck("attempt numbers recorded twice", doubled));
  const tokenOwners = new Map<string, Set<string>>();
  for (const a of attempts) {
    if (a.lease_token && a.worker_id) tokenOwners.set(a.lease_token, (tokenOwners.get(a.lease_token) ?? new Set()).add(a.worker_id));
  }
  const shared = [...tokenOwners].filter(([, owners]) => owners.size > 1).map(([token, owners]) => `token ${token}: ${[...owners].join(", ")}`);
  checks.push(zeroCheck("lease tokens handed to two workers", shared));

  // 12b. An attempt recorded `not_started` did not start: it applied no effect in its window
  // (the ledger row carries the attempt number and when it was applied).
  const { rows: ranAnyway } = await db.query<{ job_id: string; attempt: number; applied_at: Date }>(
    `SELECT e.job_id::text, e.attempt, e.applied_at
       FROM job_effects e
       JOIN job_attempts a ON a.job_id = e.job_id AND a.attempt = e.attempt AND a.outcome::text = 'not_started'
      WHERE e.applied_at BETWEEN a.started_at AND a.finished_at`,
  );
  checks.push(
    zeroCheck(
      "attempts recorded not_started that applied an effect",
      ranAnyway.map((r) => `${r.job_id} attempt ${r.attempt}: effect applied at ${r.applied_at.toISOString()}`),
    ),
  );

  // 13. A worker whose results were refused ran an attempt: that attempt must have a record — a
  // job_attempts row of that worker, or the finished row of a success it wrote (an ack that
  // committed while the connection died is retried and refused: its record is the finished row).
  const unrecorded = facts.fleet
    .logs()
    .filter(({ line }) => line.msg === "results refused: the lease is no longer held by this worker")
    .flatMap(({ member, line }) => (Array.isArray(line.jobRowIds) ? (line.jobRowIds as string[]) : []).map((rowId) => ({ member, rowId: String(rowId) })))
    .filter(({ member, rowId }) => {
      const job = byRow.get(rowId);
      if (!job) return true;
      if (job.state === "SUCCEEDED" && job.worker === member.workerId) return false;
      return !(attemptsOf.get(job.job_id) ?? []).some((a) => a.worker_id === member.workerId);
    })
    .map(({ member, rowId }) => {
      const job = byRow.get(rowId);
      return `w${member.index} (${member.workerId}) ran row ${rowId}${job ? ` = job ${job.job_id}, ${job.state} at attempt ${job.attempt} by ${job.worker}` : ""}: results refused, no attempt of it recorded`;
    });
  checks.push(zeroCheck("refused results whose attempt has no record", unrecorded));

  // 14–16. DEAD only for permanent errors or exhausted attempts, each with its structured error;
  // permanent failures do die.
  const dead = jobs.filter((j) => j.state === "DEAD");
  const badDead = dead
    .filter((j) => {
      const error = j.error as { class?: string } | null;
      return !(error?.class === "permanent" || j.attempt >= j.max_attempts);
    })
    .map((j) => `${j.job_id} ${j.job_type} attempt ${j.attempt}/${j.max_attempts} ${JSON.stringify(j.error)}`);
  checks.push(zeroCheck("DEAD jobs without a permanent error or exhausted attempts", badDead, dead.length));
  const unstructured = dead.filter((j) => !ZJobError.safeParse(j.error).success).map((j) => `${j.job_id}: ${JSON.stringify(j.error)}`);
  checks.push(zeroCheck("DEAD jobs without a structured error", unstructured, dead.length));
  // The payload says what a job is meant to do (also for jobs whose enqueue was never acknowledged).
  const kindOf = (j: JobFact): JobKind | undefined =>
    j.job_type === "diag.fail" ? (j.payload.mode === "permanent" ? "permanent" : "transient") : facts.acknowledged.get(j.job_id);
  const wrongEnd = jobs
    .filter((j) => !j.is_live)
    .filter((j) => {
      const kind = kindOf(j);
      if (kind === "permanent") return !(j.state === "DEAD" && (j.error as { code?: string } | null)?.code === "DIAG_PERMANENT");
      return j.state !== "SUCCEEDED" && !(j.state === "DEAD" && j.attempt >= j.max_attempts);
    })
    .map((j) => `${j.job_id} (${kindOf(j) ?? j.job_type}) ended ${j.state} at attempt ${j.attempt}`);
  checks.push(zeroCheck("jobs that ended against their kind", wrongEnd, jobs.length));

  return checks;
};

const describeExit = (m: FleetMember): string => {
  const crash = m.stderr.trim().split("\n").slice(-6).join(" | ");
  const lastLog = m.process
    .logs()
    .filter((l) => (l.level ?? 0) >= 40)
    .slice(-2)
    .map((l) => `${l.msg}${l.err ? ` (${String((l.err as { message?: string }).message)})` : ""}`)
    .join("; ");
  return `w${m.index} (${m.workerId ?? "never started"}) exited code=${m.exit?.code} signal=${m.exit?.signal} at +${m.exit ? m.exit.at - m.startedAt : "?"} ms; stderr: ${crash || "(empty)"}; last warnings: ${lastLog || "(none)"}`;
};
