import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import type { TJobError } from "@porter/contracts";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { advanceRedrives, createRedrive } from "../dlq/redrive-runner";
import * as core from "../index";
import { allTransitions, canTransition, ENTRY_STATE, PRUNABLE_STATES } from "../state";
import { controlPlane } from "../testing/fixtures";
import { agePriorities } from "./age-priorities";
import { cancelJob, cancelJobs } from "./cancel-job";
import { type ClaimedJob, claimJobs } from "./claim-jobs";
import { completeJobs } from "./complete-jobs";
import { type EnqueueInput, enqueueJobs } from "./enqueue-jobs";
import { expireJobs } from "./expire-jobs";
import { extendLeases } from "./extend-leases";
import { type Failure, failJobs } from "./fail-jobs";
import { handBackJobs } from "./hand-back-jobs";
import { pruneFinished } from "./prune-finished";
import { redriveJobs } from "./redrive-jobs";
import { rescueExpiredLeases } from "./rescue-expired-leases";
import { rescueLostWorkers } from "./rescue-lost-workers";
import { retryJobsNow } from "./retry-jobs-now";
import { startJobs } from "./start-jobs";
import { edgesOf, JOB_TRANSITIONS, STATE_KEEPING_WRITES, type StateOrNone, type Transition } from "./transitions";
import { registerWorker } from "./workers";

// Every writer of a job's state against the table of named transitions (sql/transitions.ts):
// statically (the source and the database's routines) and by observing a lifecycle that runs
// every transition under a recording trigger.

const db = useTestDatabase();
const ROOT = fileURLToPath(new URL("../../../../", import.meta.url));
const TRANSITIONS: readonly Transition[] = JOB_TRANSITIONS;
const edgeKey = ([from, to]: [StateOrNone, StateOrNone]): string => `${from ?? "[*]"} → ${to ?? "[*]"}`;

/**
 * The statements that can change a job's state: a SET of `state` on `jobs`, a row into or out of
 * `jobs` or `finished_jobs` (a job finishes by moving there, comes back by a redrive, goes by
 * retention). `insertFinished(` is the shared INSERT INTO finished_jobs of sql/finish.ts, which
 * is only a fragment: its users are the writers.
 */
const stateWrites = (source: string): string[] => {
  // Comments do not count (doc comments name these statements): /* … */, // … and SQL's -- ….
  const text = source.replace(/\/\*[\s\S]*?\*\//g, " ").replace(/(^|\s)(\/\/|--)[^\n]*/g, "$1");
  const found: string[] = [];
  for (const m of text.matchAll(/\bUPDATE\s+jobs\b(?:\s+(?!SET\b)\w+)?\s+SET\b((?:(?!\bWHERE\b|\bFROM\b|\bRETURNING\b)[\s\S])*)/gi)) {
    if (/(^|[\s,(])state\s*=/i.test(m[1]!)) found.push("UPDATE jobs SET state");
  }
  for (const [label, re] of [
    ["INSERT INTO jobs", /\bINSERT\s+INTO\s+jobs\b/gi],
    ["DELETE FROM jobs", /\bDELETE\s+FROM\s+jobs\b/gi],
    ["INSERT INTO finished_jobs", /\bINSERT\s+INTO\s+finished_jobs\b/gi],
    ["DELETE FROM finished_jobs", /\bDELETE\s+FROM\s+finished_jobs\b/gi],
    ["insertFinished", /\binsertFinished\(\{/g],
  ] as const) {
    for (const _ of text.matchAll(re)) found.push(label);
  }
  return found;
};

/** States a file's statements write as literals (`SET state = 'X'`, `insertFinished({ state: "'X'"`). */
const literalTargets = (text: string): string[] => [
  ...[...text.matchAll(/\bSET\s+state\s*=\s*'(\w+)'/gi)].map((m) => m[1]!),
  ...[...text.matchAll(/insertFinished\(\{\s*state:\s*"'(\w+)'"/g)].map((m) => m[1]!),
];

/** Product source: packages' and apps' `src`, without tests, test support (`testing/`) and generated code. */
const sourceFiles = (): string[] => {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) {
        if (!["node_modules", "generated", "testing", ".next"].includes(name)) walk(path);
      } else if (/\.(ts|tsx|mts|sql)$/.test(name) && !/\.test\.ts$/.test(name)) out.push(relative(ROOT, path));
    }
  };
  for (const top of ["packages", "apps"]) {
    for (const pkg of readdirSync(join(ROOT, top))) {
      const src = join(ROOT, top, pkg, "src");
      if (statSync(join(ROOT, top, pkg)).isDirectory() && readdirSync(join(ROOT, top, pkg)).includes("src")) walk(src);
    }
  }
  return out;
};

/**
 * A routine file's (sql/routines/*.sql) state writes, by the function that holds them: each must
 * be a transition's `routine` (whose edges the pg_proc test and the lifecycle check). Returns the
 * writes outside every declared routine.
 */
const routineStrays = (text: string, routines: readonly string[]): string[] => {
  const starts = [...text.matchAll(/\bCREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(\w+)/gi)];
  const blocks = [{ name: null as string | null, body: text.slice(0, starts[0]?.index ?? text.length) }];
  starts.forEach((m, i) => {
    blocks.push({ name: m[1]!, body: text.slice(m.index, starts[i + 1]?.index ?? text.length) });
  });
  return blocks.flatMap((b) => (b.name && routines.includes(b.name) ? [] : stateWrites(b.body).map((w) => `${b.name ?? "(outside a function)"}: ${w}`)));
};

/** The one fragment allowed to hold INSERT INTO finished_jobs on its own: its users are checked instead. */
const FRAGMENTS = ["packages/core/src/sql/finish.ts"];
const statementFile = (t: Transition): string => t.statement ?? t.source;

describe("the transition table, statically", () => {
  it("declares only edges of the state machine, and every edge of it is some transition's", () => {
    for (const t of TRANSITIONS) {
      for (const edge of edgesOf(t)) expect(canTransition(...edge), `${t.name}: ${edgeKey(edge)}`).toBe(true);
    }
    const declared = new Set(TRANSITIONS.flatMap((t) => edgesOf(t).map(edgeKey)));
    const machine = [
      ...allTransitions(),
      [null, ENTRY_STATE] as [StateOrNone, StateOrNone],
      ...PRUNABLE_STATES.map((s) => [s, null] as [StateOrNone, StateOrNone]),
    ];
    expect(machine.map(edgeKey).filter((e) => !declared.has(e))).toEqual([]);
    expect(new Set(TRANSITIONS.map((t) => t.name)).size).toBe(TRANSITIONS.length);
  });

  it("names functions that @porter/core exports from the transition's file, which names the transition", () => {
    const exported = core as unknown as Record<string, unknown>;
    for (const entry of [...TRANSITIONS, ...STATE_KEEPING_WRITES]) {
      const text = readFileSync(join(ROOT, entry.source), "utf8");
      for (const fn of entry.functions) {
        expect(typeof exported[fn], `${entry.name}: ${fn} exported by @porter/core`).toBe("function");
        expect(text, `${entry.name}: ${fn} defined in ${entry.source}`).toMatch(new RegExp(`export const ${fn}\\b`));
      }
    }
    for (const t of TRANSITIONS) {
      for (const file of new Set([t.source, statementFile(t)])) {
        expect(readFileSync(join(ROOT, file), "utf8"), `${file} names its transition \`${t.name}\``).toContain(`\`${t.name}\``);
      }
    }
  });

  it("finds every statement in the source that writes a job's state in a transition's file", () => {
    const owners = new Map<string, Transition[]>();
    for (const t of TRANSITIONS) owners.set(statementFile(t), [...(owners.get(statementFile(t)) ?? []), t]);
    const strays: string[] = [];
    for (const file of sourceFiles()) {
      const text = readFileSync(join(ROOT, file), "utf8");
      const writes = stateWrites(text);
      if (writes.length === 0) continue;
      if (FRAGMENTS.includes(file)) {
        expect(
          writes.filter((w) => w !== "INSERT INTO finished_jobs"),
          file,
        ).toEqual([]);
        continue;
      }
      if (file.endsWith(".sql")) {
        const routines = TRANSITIONS.flatMap((t) => (t.routine ? [t.routine] : []));
        strays.push(...routineStrays(text, routines).map((w) => `${file}: ${w}`));
        const targets = new Set(TRANSITIONS.filter((t) => t.routine).flatMap((t) => t.to));
        for (const state of literalTargets(text)) expect(targets.has(state as StateOrNone), `${file} writes state ${state}`).toBe(true);
        continue;
      }
      const mine = owners.get(file);
      if (!mine) {
        strays.push(`${file}: ${writes.join(", ")}`);
        continue;
      }
      const targets = new Set(mine.flatMap((t) => t.to));
      for (const state of literalTargets(text)) expect(targets.has(state as StateOrNone), `${file} writes state ${state}`).toBe(true);
    }
    expect(strays, "statements writing a job's state outside every named transition").toEqual([]);
    for (const [file, ts] of owners) {
      if (ts.every((t) => t.routine)) continue; // the statement is the routine's (checked against pg_proc below)
      expect(stateWrites(readFileSync(join(ROOT, file), "utf8")).length, `${file} holds the statement of ${ts.map((t) => t.name)}`).toBeGreaterThan(0);
    }
  });

  it("recognises a state write in any of its shapes (the scanner itself can fail)", () => {
    expect(stateWrites(`UPDATE jobs j\n SET lease_until = NULL, state = 'READY' FROM x`)).toEqual(["UPDATE jobs SET state"]);
    expect(stateWrites(`UPDATE jobs SET started_at = now() WHERE state = 'RUNNING'`)).toEqual([]);
    const finishing = "WITH d AS (DELETE FROM jobs j WHERE true RETURNING *) fin AS ($" + `{insertFinished({ state: "'DEAD'" })})`;
    expect(stateWrites(finishing)).toEqual(["DELETE FROM jobs", "insertFinished"]);
    expect(stateWrites(`DELETE FROM job_attempts x; INSERT INTO jobs_archive VALUES (1)`)).toEqual([]);
    const routineFile = `CREATE OR REPLACE FUNCTION porter_claim(p integer) RETURNS void AS $$ UPDATE jobs j SET state = 'RUNNING' $$;
      CREATE FUNCTION porter_rogue() RETURNS void AS $$ DELETE FROM jobs WHERE true $$;`;
    expect(routineStrays(routineFile, ["porter_claim"])).toEqual(["porter_rogue: DELETE FROM jobs"]);
  });
});

describe("the transition table, in the database", () => {
  it("has every routine that writes a job's state declared by a transition", async () => {
    const { rows } = await db.pool.query<{ name: string; src: string }>(
      `SELECT p.proname AS name, p.prosrc AS src FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')`,
    );
    const writers = rows.filter((r) => stateWrites(r.src).length > 0).map((r) => r.name);
    const declared = TRANSITIONS.flatMap((t) => (t.routine ? [t.routine] : []));
    expect(writers.filter((w) => !declared.includes(w))).toEqual([]);
    for (const r of declared) expect(writers, `routine ${r} writes a job's state`).toContain(r);
  });
});

describe("the transition table, observed", () => {
  const t0 = new Date();
  const later = (ms: number) => new Date(t0.getTime() + ms);
  const HOUR = 3_600_000;
  let n = 0;
  const input = (over: Partial<EnqueueInput> = {}): EnqueueInput => ({
    job_type: "q1.job",
    tenant_id: "tenant_A",
    payload: { n: ++n },
    idempotency_key: `tr-${n}`,
    ...over,
  });
  const error = (attempt: number): TJobError => ({
    code: "BOOM",
    class: "permanent",
    message: "boom",
    worker_version: "test",
    attempt,
    trace_id: "t",
    last_checkpoint: null,
  });
  const ref = (c: ClaimedJob) => ({ id: c.id, leaseToken: c.leaseToken, attempt: c.attempt });
  const fail = (c: ClaimedJob, next: Failure["next"]): Failure => ({ ...ref(c), outcome: "failed", error: error(c.attempt), next });

  /** Per transition, the edges it was seen to take; and the functions run. */
  const observed = new Map<string, Set<string>>();
  const ran = new Set<string>();

  /** The edges the trigger recorded, one per job and transaction (a move between tables pairs a DELETE with an INSERT). */
  const recordedEdges = async (): Promise<Array<[StateOrNone, StateOrNone]>> => {
    const { rows } = await db.pool.query<{ tx: string; job_id: string; old_state: StateOrNone; new_state: StateOrNone }>(
      `SELECT tx::text, job_id::text, old_state, new_state FROM transition_log ORDER BY seq`,
    );
    const groups = new Map<string, typeof rows>();
    for (const r of rows) groups.set(`${r.tx}/${r.job_id}`, [...(groups.get(`${r.tx}/${r.job_id}`) ?? []), r]);
    const edges: Array<[StateOrNone, StateOrNone]> = [];
    for (const [key, events] of groups) {
      const gone = events.filter((e) => e.new_state === null).map((e) => e.old_state);
      const born = events.filter((e) => e.old_state === null).map((e) => e.new_state);
      for (const e of events) if (e.old_state !== null && e.new_state !== null) edges.push([e.old_state, e.new_state]);
      if (gone.length > 1 || born.length > 1) throw new Error(`job ${key} left or entered a table twice in one transaction`);
      if (gone.length || born.length) edges.push([gone[0] ?? null, born[0] ?? null]);
    }
    return edges;
  };

  /** The edges of `edges` that no transition made by `fn` declares. */
  const undeclared = (fn: string, edges: Array<[StateOrNone, StateOrNone]>): string[] => {
    const mine = TRANSITIONS.filter((t) => t.functions.includes(fn));
    return edges.filter((e) => !mine.some((t) => edgesOf(t).some((d) => edgeKey(d) === edgeKey(e)))).map((e) => `${fn}: ${edgeKey(e)}`);
  };

  /** Runs `run` (a call of `fn`) and checks every state change it made is declared by a transition of `fn`. */
  const step = async <T>(fn: string, run: () => Promise<T>): Promise<T> => {
    await db.pool.query(`TRUNCATE transition_log`);
    const out = await run();
    const edges = await recordedEdges();
    expect(undeclared(fn, edges)).toEqual([]);
    ran.add(fn);
    for (const t of TRANSITIONS.filter((t) => t.functions.includes(fn))) {
      const seen = observed.get(t.name) ?? new Set<string>();
      for (const e of edges) if (edgesOf(t).some((d) => edgeKey(d) === edgeKey(e))) seen.add(edgeKey(e));
      observed.set(t.name, seen);
    }
    return out;
  };

  const enqueue = (inputs: EnqueueInput[]) => step("enqueueJobs", () => enqueueJobs(db.pool, inputs));
  /** Claims what is claimable and checks it is exactly `jobIds`. */
  const claim = async (jobIds: string[], workerId = "w1", opts: { start?: number; now?: Date } = {}): Promise<ClaimedJob[]> => {
    const claimed = await step("claimJobs", () => claimJobs(db.pool, { poolId: "p1", workerId, limit: 100, ...opts }));
    expect(claimed.map((c) => c.jobId).sort()).toEqual([...jobIds].sort());
    return jobIds.map((id) => claimed.find((c) => c.jobId === id)!);
  };
  const complete = (jobs: ClaimedJob[]) =>
    step("completeJobs", () =>
      completeJobs(
        db.pool,
        jobs.map((c) => ({ ...ref(c), result: null })),
      ),
    );
  const ids = (rs: Array<{ job_id: string }>) => rs.map((r) => r.job_id);

  beforeAll(async () => {
    await controlPlane(db.pool, { queues: [{ id: "q1", lease_seconds: 30, max_runtime_s: 60, retention_s: 3600 }] });
    // Test-only: every row into, out of or across states of the two job tables, with its transaction.
    await db.pool.query(`
      CREATE TABLE transition_log (seq bigserial PRIMARY KEY, tx bigint NOT NULL DEFAULT txid_current(), job_id uuid NOT NULL,
                                   old_state text, new_state text);
      CREATE FUNCTION test_log_transition() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          INSERT INTO transition_log (job_id, old_state, new_state) VALUES (NEW.job_id, NULL, NEW.state::text);
        ELSIF TG_OP = 'DELETE' THEN
          INSERT INTO transition_log (job_id, old_state, new_state) VALUES (OLD.job_id, OLD.state::text, NULL);
        ELSIF OLD.state IS DISTINCT FROM NEW.state THEN
          INSERT INTO transition_log (job_id, old_state, new_state) VALUES (NEW.job_id, OLD.state::text, NEW.state::text);
        END IF;
        RETURN NULL;
      END $$;
      CREATE TRIGGER test_log_jobs AFTER INSERT OR UPDATE OR DELETE ON jobs FOR EACH ROW EXECUTE FUNCTION test_log_transition();
      CREATE TRIGGER test_log_finished AFTER INSERT OR UPDATE OR DELETE ON finished_jobs FOR EACH ROW EXECUTE FUNCTION test_log_transition();
    `);
  });

  it("catches an edge its function does not declare (the check itself can fail)", async () => {
    const [r] = await enqueueJobs(db.pool, [input()]);
    await db.pool.query(`TRUNCATE transition_log`);
    await db.pool.query(`UPDATE jobs SET state = 'RETRY_WAIT' WHERE job_id = $1`, [r!.job_id]);
    const edges = await recordedEdges();
    expect(edges).toEqual([["READY", "RETRY_WAIT"]]);
    expect(undeclared("claimJobs", edges)).toEqual(["claimJobs: READY → RETRY_WAIT"]);
    await db.pool.query(`DELETE FROM jobs WHERE job_id = $1`, [r!.job_id]);
  });

  it("the worker's path: enqueue, claim, start, heartbeat, ack, fail every way, hand back, reclaim", async () => {
    const batch = await enqueue([input(), input(), input(), input(), input()]);
    const single = await enqueue([input()]);
    const jobs = await claim([...ids(batch), ...ids(single)], "w1", { start: 3 });
    const [j1, j2, j3, j4, j5, j6] = jobs as [ClaimedJob, ClaimedJob, ClaimedJob, ClaimedJob, ClaimedJob, ClaimedJob];
    expect((await step("startJobs", () => startJobs(db.pool, jobs.filter((c) => !c.isStarted).map(ref)))).started).toHaveLength(3);
    expect((await step("extendLeases", () => extendLeases(db.pool, jobs.map(ref)))).extended).toHaveLength(6);
    await complete([j1]);
    await step("handBackJobs", () => handBackJobs(db.pool, [ref(j2)]));
    const failed = await step("failJobs", () =>
      failJobs(db.pool, [
        fail(j3, { state: "RETRY_WAIT", runAt: new Date(Date.now() - 1000) }),
        fail(j4, { state: "DEAD" }),
        fail(j5, { state: "CANCELLED" }),
        fail(j6, { state: "EXPIRED" }),
      ]),
    );
    expect(failed.stale).toEqual([]);
    const again = await claim([j2.jobId, j3.jobId]);
    await complete(again);
    // DEAD → READY, and on to its end.
    expect((await step("redriveJobs", () => redriveJobs(db.pool, { jobIds: [j4.jobId], actor: "test" }))).redriven).toEqual([j4.jobId]);
    await complete(await claim([j4.jobId]));
  });

  it("queued work: cancel (one, bulk), retry now, expire, promote, age", async () => {
    const deadline = later(HOUR).toISOString();
    const [k1, k2, k3, k4, k5] = ids(await enqueue([input(), input(), input({ deadline_at: deadline }), input({ deadline_at: deadline }), input()]));
    const running = await claim([k1!, k2!, k3!, k4!, k5!]);
    const wait = { state: "RETRY_WAIT" as const, runAt: later(HOUR / 2) };
    await step("failJobs", () => failJobs(db.pool, [fail(running[1]!, wait), fail(running[3]!, wait), fail(running[4]!, wait)]));
    await step("handBackJobs", () => handBackJobs(db.pool, [ref(running[0]!), ref(running[2]!)]));
    // k1, k3 READY; k2, k4, k5 RETRY_WAIT until t0 + 30 min; k3 and k4 have a deadline at t0 + 1 h.
    expect(await step("cancelJob", () => cancelJob(db.pool, { jobId: k1!, actor: "test" }))).toEqual({ job_id: k1, status: "CANCELLED" });
    expect((await step("cancelJobs", () => cancelJobs(db.pool, { jobIds: [k2!], actor: "test" }))).cancelled).toEqual([k2]);
    expect((await step("retryJobsNow", () => retryJobsNow(db.pool, { jobIds: [k5!], actor: "test" }))).retried).toEqual([k5]);
    expect(await step("agePriorities", () => agePriorities(db.pool))).toEqual({ aged: 0 });
    expect(await step("expireJobs", () => expireJobs(db.pool, { now: later(2 * HOUR) }))).toEqual({ expired: 2, promoted: 1 });
    await complete(await claim([k5!]));
  });

  /** Four running jobs of `workerId` that a rescue sends four ways: READY, DEAD (last attempt), CANCELLED (requested), EXPIRED. */
  const fourToRescue = async (workerId: string): Promise<string[]> => {
    const rs = ids(await enqueue([input(), input({ max_attempts: 1 }), input(), input({ deadline_at: later(HOUR).toISOString() })]));
    await claim(rs, workerId);
    expect(await step("cancelJob", () => cancelJob(db.pool, { jobId: rs[2]!, actor: "test" }))).toEqual({ job_id: rs[2], status: "RUNNING" });
    expect((await step("cancelJobs", () => cancelJobs(db.pool, { jobIds: [rs[2]!], actor: "test" }))).cancel_requested).toEqual([rs[2]]);
    return rs;
  };

  it("rescue of expired leases and of lost workers, each every way", async () => {
    const leased = await fourToRescue("w-lease");
    const rescued = await step("rescueExpiredLeases", () => rescueExpiredLeases(db.pool, { now: later(2 * HOUR) }));
    expect(rescued).toMatchObject({ requeued: 1, dead: 1, cancelled: 1, expired: 1 });
    await complete(await claim([leased[0]!], "w1", { now: later(2 * HOUR) })); // requeued to run at the rescue's time

    await registerWorker(db.pool, { id: "w-lost", poolId: "p1", host: "h", pid: 1, version: "test", concurrency: 4 });
    const lost = await fourToRescue("w-lost");
    const released = await step("rescueLostWorkers", () => rescueLostWorkers(db.pool, { now: later(2 * HOUR) }));
    expect(released).toMatchObject({ requeued: 1, dead: 1, cancelled: 1, expired: 1 });
    await complete(await claim([lost[0]!], "w1", { now: later(2 * HOUR) }));
  });

  it("retention, then: every function ran, every declared edge was observed", async () => {
    // A durable redrive's batch (forced: the rescued job's error may be any class; the rescues ran 2 h ahead).
    const dead = await db.pool.query<{ job_id: string }>(`SELECT job_id::text FROM finished_jobs WHERE state = 'DEAD' ORDER BY job_id LIMIT 1`);
    const redrive = await createRedrive(db.pool, { selection: { job_ids: [dead.rows[0]!.job_id] }, force: true, actor: "test", now: later(3 * HOUR) });
    const { batches } = await step("advanceRedrives", () => advanceRedrives(db.pool, { now: later(3 * HOUR) }));
    expect(batches).toEqual([{ redrive_id: redrive.redrive_id, redriven: 1, skipped: 0, status: "completed" }]);
    const { pruned } = await step("pruneFinished", () => pruneFinished(db.pool, { now: later(72 * HOUR) }));
    expect(pruned).toBeGreaterThan(0);
    const notRun = [...TRANSITIONS, ...STATE_KEEPING_WRITES].flatMap((e) => e.functions).filter((fn) => !ran.has(fn));
    expect(notRun).toEqual([]);
    const unseen = TRANSITIONS.flatMap((t) =>
      edgesOf(t)
        .map(edgeKey)
        .filter((e) => !observed.get(t.name)?.has(e))
        .map((e) => `${t.name}: ${e}`),
    );
    expect(unseen).toEqual([]);
  });
});
