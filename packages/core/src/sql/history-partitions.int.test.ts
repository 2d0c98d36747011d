import { randomBytes } from "node:crypto";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { getJob } from "../reads/get-job";
import { listJobs } from "../reads/jobs-query";
import { controlPlane } from "../testing/control-plane-factory";
import { ensureHistoryPartitions, HISTORY_DAYS_AHEAD, pruneFinished } from "./prune-finished";
import { redriveJobs } from "./redrive-jobs";

// finished_jobs partitioned by day of creation (migration 20261202002400_partitioned_history,
// routines/partitions.sql), and job_attempts and job_events by the same days (migration
// 20261202003000_partitioned_timeline): partitions made ahead, inserts outside every day,
// retirement of exactly the days past the horizon (keeping DEAD and late-finishing jobs, and the
// timelines of those and of live jobs), the idempotency keys deleted in chunks before a day goes,
// and the readers across days.
// The clock moves forward (`now`), as maintenance's own tests do: days ahead of the real one are
// partitions like any other. Partitions are made and dropped as the runtime role (appPool).
const db = useTestDatabase();
const DAY = 86_400_000;
const t0 = Date.now();
const at = (days: number, ms = 0) => new Date(t0 + days * DAY + ms);

/** A UUIDv7 made at `when` (its first 48 bits are when's Unix milliseconds), as enqueue makes them. */
const uuidv7 = (when: Date): string => {
  const hex = when.getTime().toString(16).padStart(12, "0") + `7${randomBytes(2).toString("hex").slice(1)}8${randomBytes(8).toString("hex").slice(1)}`;
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
};

let n = 0;
/** A finished job created at `created` (its id made then), finished `finishedAfterMs` later, with its idempotency key. */
const finished = async (created: Date, opts: { state?: "SUCCEEDED" | "DEAD"; finishedAfterMs?: number; queue?: string } = {}): Promise<string> => {
  const jobId = uuidv7(created);
  const key = `hp-${++n}`;
  const state = opts.state ?? "SUCCEEDED";
  const queue = opts.queue ?? "hq";
  await db.pool.query(
    `INSERT INTO finished_jobs (id, job_id, job_type, queue_id, tenant_id, payload, priority, idempotency_key, state, attempt,
                                max_attempts, timeout_s, run_at, trace_id, created_at, finished_at, error)
     VALUES ($1, $2, $3, $4, 'tenant_A', '{}', 50, $5, $6, 1, 1, 60, $7, 't', $7, $8, $9)`,
    [
      1_000_000 + n,
      jobId,
      `${queue}.job`,
      queue,
      key,
      state,
      created,
      new Date(created.getTime() + (opts.finishedAfterMs ?? 1000)),
      state === "DEAD" ? { code: "BOOM", class: "permanent", message: "no", worker_version: "t", attempt: 1, trace_id: "t", last_checkpoint: null } : null,
    ],
  );
  await db.pool.query(`INSERT INTO idempotency_keys (tenant_id, idempotency_key, job_id, created_at) VALUES ('tenant_A', $1, $2, $3)`, [key, jobId, created]);
  return jobId;
};

/** A failed attempt and a `redriven` event of `jobId` (the timeline tables' rows), at `at`. */
const timelineRows = async (jobId: string, at: Date): Promise<void> => {
  await db.pool.query(
    `INSERT INTO job_attempts (job_id, attempt, worker_id, started_at, finished_at, outcome, error)
     VALUES ($1, 1, 'w-hp', $2, $2, 'failed', '{"code":"HP"}')`,
    [jobId, at],
  );
  await db.pool.query(`INSERT INTO job_events (job_id, at, kind, actor) VALUES ($1, $2, 'redriven', 'test')`, [jobId, at]);
};

/** A live job (in `jobs`, waiting for a retry) created at `created`, with its key and a failed attempt. */
const live = async (created: Date): Promise<string> => {
  const jobId = uuidv7(created);
  const key = `hp-${++n}`;
  await db.pool.query(
    `INSERT INTO jobs (job_id, job_type, queue_id, tenant_id, payload, priority, idempotency_key, state, attempt, max_attempts,
                       timeout_s, run_at, trace_id, created_at)
     VALUES ($1, 'hq.job', 'hq', 'tenant_A', '{}', 50, $2, 'RETRY_WAIT', 1, 50, 60, $3, 't', $3)`,
    [jobId, key, new Date(created.getTime() + 30 * DAY)],
  );
  await db.pool.query(`INSERT INTO idempotency_keys (tenant_id, idempotency_key, job_id, created_at) VALUES ('tenant_A', $1, $2, $3)`, [key, jobId, created]);
  await timelineRows(jobId, created);
  return jobId;
};

/** Where a job's attempts and events are: the partitions holding them (sorted), [] when none. */
const timelineOf = async (jobId: string): Promise<string[]> =>
  (
    await db.pool.query<{ p: string }>(
      `SELECT tableoid::regclass::text AS p FROM job_attempts WHERE job_id = $1
       UNION ALL SELECT tableoid::regclass::text FROM job_events WHERE job_id = $1 ORDER BY 1`,
      [jobId],
    )
  ).rows.map((r) => r.p);

/** Every partition of the three history tables. */
const allPartitions = async (): Promise<string[]> =>
  (
    await db.pool.query<{ name: string }>(
      `SELECT p.name FROM unnest(ARRAY['finished_jobs', 'job_attempts', 'job_events']) t, porter_history_partitions(t::regclass) p ORDER BY 1`,
    )
  ).rows.map((r) => r.name);

/** The partition a finished job is in, or null. */
const partitionOf = async (jobId: string): Promise<string | null> =>
  (await db.pool.query<{ p: string }>(`SELECT tableoid::regclass::text AS p FROM finished_jobs WHERE job_id = $1`, [jobId])).rows[0]?.p ?? null;

const days = async (): Promise<string[]> =>
  (await db.pool.query<{ name: string }>(`SELECT name FROM porter_history_partitions() WHERE NOT is_default ORDER BY hi`)).rows.map((r) => r.name);

const dayName = (d: Date) => `finished_jobs_p${d.toISOString().slice(0, 10).replaceAll("-", "")}`;

beforeAll(async () => {
  // The only queue: the horizon is its retention, 3 days.
  await controlPlane(db.pool, { pool: "hp", queues: [{ id: "hq", retention_s: 3 * 86_400 }] });
});

describe("finished_jobs' daily partitions", () => {
  it("are created ahead of the clock by maintenance (as the runtime role), one a day with no gap, once", async () => {
    // Two passes ten days apart (the leader runs one every second): the second goes on from the first's last day.
    const all = [...(await ensureHistoryPartitions(db.appPool, { now: at(10) })), ...(await ensureHistoryPartitions(db.appPool, { now: at(20) }))];
    const created = all.filter((name) => name.startsWith("finished_jobs_"));
    expect(created.length).toBeGreaterThanOrEqual(10);
    expect(created.at(-1)).toBe(dayName(at(20 + HISTORY_DAYS_AHEAD)));
    // The timeline tables get the same days, with the same bounds.
    for (const table of ["job_attempts", "job_events"]) {
      expect(all.filter((name) => name.startsWith(`${table}_`))).toEqual(created.map((name) => name.replace("finished_jobs_", `${table}_`)));
      const bounds = async (t: string) =>
        (await db.pool.query<{ b: string }>(`SELECT concat_ws(' ', lo, hi, is_default) AS b FROM porter_history_partitions($1::regclass) ORDER BY 1`, [t]))
          .rows;
      expect(await bounds(table)).toEqual(await bounds("finished_jobs"));
    }
    expect(await ensureHistoryPartitions(db.appPool, { now: at(20) })).toEqual([]);
    const bounds = (
      await db.pool.query<{ lo: string | null; hi: string }>(`SELECT lo::text, hi::text FROM porter_history_partitions() WHERE NOT is_default ORDER BY hi`)
    ).rows;
    for (let i = 1; i < bounds.length; i++) expect(bounds[i]!.lo).toBe(bounds[i - 1]!.hi);
    // Owned by the owner, not the runtime role, which holds no grant on them and cannot drop them.
    const { rows } = await db.pool.query<{ owner: string; can_select: boolean }>(
      `SELECT pg_get_userbyid(c.relowner) AS owner, has_table_privilege('porter_app', c.oid, 'SELECT') AS can_select
         FROM pg_class c WHERE c.relname = $1`,
      [created[0]],
    );
    expect(rows[0]).toEqual({ owner: expect.not.stringMatching(/^porter_app$/), can_select: false });
    await expect(db.appPool.query(`DROP TABLE ${created[0]}`)).rejects.toMatchObject({ code: "42501" });
  });

  it("the timeline tables' partitions are reached through the tables only: the runtime role cannot read, write or drop one by name", async () => {
    await ensureHistoryPartitions(db.appPool, { now: at(0) });
    const day = dayName(at(1)).replace("finished_jobs_", "job_attempts_");
    for (const table of [day, "job_attempts_p_first", "job_attempts_default", "job_events_p_first", "job_events_default", "_porter_history_retirement"]) {
      const { rows } = await db.pool.query<{ can: boolean }>(
        `SELECT has_table_privilege('porter_app', $1, 'SELECT') OR has_table_privilege('porter_app', $1, 'INSERT')
             OR has_table_privilege('porter_app', $1, 'DELETE') OR has_table_privilege('porter_app', $1, 'UPDATE') AS can`,
        [table],
      );
      expect({ table, can: rows[0]!.can }).toEqual({ table, can: false });
      await expect(db.appPool.query(`SELECT 1 FROM ${table} LIMIT 1`)).rejects.toMatchObject({ code: "42501" });
    }
    await expect(db.appPool.query(`DROP TABLE ${day}`)).rejects.toMatchObject({ code: "42501" });
    await expect(db.appPool.query(`ALTER TABLE job_events DETACH PARTITION job_events_default`)).rejects.toMatchObject({ code: "42501" });
    // Through the tables, every day: a row written and read back by job id lands in its day.
    const jobId = uuidv7(at(1));
    await db.appPool.query(`INSERT INTO job_attempts (job_id, attempt, started_at, finished_at, outcome) VALUES ($1, 1, now(), now(), 'failed')`, [jobId]);
    expect(await timelineOf(jobId)).toEqual([day]);
    await db.appPool.query(`DELETE FROM job_attempts WHERE job_id = $1`, [jobId]);
  });

  it("take an insert of any id: far in the past or future, it lands in the default partition", async () => {
    const past = await finished(new Date("1990-01-01T00:00:00Z"));
    const future = await finished(new Date("2300-01-01T00:00:00Z"));
    const ahead = await finished(at(10));
    expect(await partitionOf(past)).toBe("finished_jobs_p_first");
    expect(await partitionOf(future)).toBe("finished_jobs_default");
    expect(await partitionOf(ahead)).toBe(dayName(at(10)));
    expect(await getJob(db.appPool, future)).toMatchObject({ job_id: future, status: "SUCCEEDED" });
  });

  it("a job in an old partition is found by id, and the jobs browser pages across partitions in job_id order", async () => {
    const ids = [await finished(at(4)), await finished(at(5)), await finished(at(5, 1)), await finished(at(6)), await finished(at(7))];
    expect(new Set(await Promise.all(ids.map(partitionOf))).size).toBe(4);
    for (const id of ids) expect(await getJob(db.appPool, id)).toMatchObject({ job_id: id });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await listJobs(db.appPool, { filter: { from: at(3), to: at(8) }, cursor, limit: 2 });
      seen.push(...page.jobs.map((j) => j.job_id));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
  });

  it("a DEAD job in an old partition is redriven from it", async () => {
    const dead = await finished(at(8), { state: "DEAD" });
    expect(await partitionOf(dead)).toBe(dayName(at(8)));
    const out = await redriveJobs(db.appPool, { jobIds: [dead], actor: "test", now: at(9) });
    expect(out.redriven).toEqual([dead]);
    expect(await partitionOf(dead)).toBeNull();
    const { rows } = await db.pool.query<{ state: string }>(`SELECT state::text FROM jobs WHERE job_id = $1`, [dead]);
    expect(rows).toEqual([{ state: "READY" }]);
  });

  it("retention drops exactly the days past the horizon, keeping DEAD and late-finishing jobs (then found and redriven)", async () => {
    const old = await finished(at(11));
    const oldDead = await finished(at(11), { state: "DEAD" });
    // Created on day 12, finished on day 19.5: within its queue's 3 days at day 20.
    const late = await finished(at(12), { finishedAfterMs: 7.5 * DAY });
    const edge = await finished(at(17, 60_000)); // the day of the horizon's cutoff: not yet
    const recent = await finished(at(19));
    // A job of day 11 still waiting for a retry, in `jobs`: its attempts and events stay.
    const waiting = await live(at(11, 1000));
    for (const id of [old, oldDead, late, edge]) await timelineRows(id, at(11));
    const before = await days();
    const partitionsBefore = await allPartitions();

    const horizon = at(20 - 3);
    const { pruned, partitionsDropped } = await pruneUntilDone(at(20));
    const after = await days();
    // Every day whose end is at or before the horizon is gone, no later one.
    const hiOf = async (name: string) =>
      new Date((await db.pool.query<{ t: Date }>(`SELECT porter_uuidv7_time(hi) AS t FROM porter_history_partitions() WHERE name = $1`, [name])).rows[0]!.t);
    for (const name of after) expect((await hiOf(name)).getTime()).toBeGreaterThan(horizon.getTime());
    expect(after).toEqual(before.slice(before.length - after.length));
    // The timeline tables' days went with finished_jobs': three partitions a day.
    expect(partitionsDropped).toBe(3 * (before.length - after.length));
    expect(partitionsDropped).toBe(partitionsBefore.length - (await allPartitions()).length);
    expect(after).toContain(dayName(at(17, 60_000)));
    expect(pruned).toBeGreaterThanOrEqual(1);

    expect(await partitionOf(old)).toBeNull();
    expect(await partitionOf(oldDead)).toBe("finished_jobs_default");
    expect(await partitionOf(late)).toBe("finished_jobs_default");
    expect(await partitionOf(edge)).toBe(dayName(at(17, 60_000)));
    expect(await partitionOf(recent)).toBe(dayName(at(19)));
    const keys = await db.pool.query<{ job_id: string }>(`SELECT job_id::text FROM idempotency_keys WHERE job_id = ANY($1::uuid[])`, [[old, oldDead, late]]);
    expect(keys.rows.map((r) => r.job_id).sort()).toEqual([oldDead, late].sort());
    // The DLQ did not count the moved dead job again (the move fired no trigger).
    const groups = await db.pool.query<{ dead_now: string }>(`SELECT dead_now::text FROM dlq_groups WHERE sample_job_id = $1`, [oldDead]);
    expect(groups.rows).toEqual([{ dead_now: "1" }]);

    // The timelines: the dropped job's went with its day; the kept and the live jobs' were moved to
    // the default partitions, and the job page reads them there.
    expect(await timelineOf(old)).toEqual([]);
    for (const id of [oldDead, late, waiting]) expect(await timelineOf(id)).toEqual(["job_attempts_default", "job_events_default"]);
    expect(await timelineOf(edge)).toEqual([
      dayName(at(17, 60_000)).replace("finished_jobs_", "job_attempts_"),
      dayName(at(17, 60_000)).replace("finished_jobs_", "job_events_"),
    ]);
    for (const id of [oldDead, waiting]) {
      const kinds = (await getJob(db.appPool, id))!.timeline.map((e) => e.kind);
      expect(kinds).toEqual(expect.arrayContaining(["enqueued", "claimed", "attempt_failed", "redriven"]));
    }
    expect((await getJob(db.appPool, waiting))!.status).toBe("RETRY_WAIT");
    const waitingKey = await db.pool.query(`SELECT 1 FROM idempotency_keys WHERE job_id = $1`, [waiting]);
    expect(waitingKey.rowCount).toBe(1);

    expect(await getJob(db.appPool, oldDead)).toMatchObject({ job_id: oldDead, status: "DEAD" });
    expect((await redriveJobs(db.appPool, { jobIds: [oldDead], actor: "test", now: at(20) })).redriven).toEqual([oldDead]);
    // Past its queue's retention the late job goes too, row by row from the default partition.
    await pruneFinished(db.appPool, { now: at(23) });
    expect(await partitionOf(late)).toBeNull();
  });
});

describe("retiring a day's idempotency keys", () => {
  it("goes a chunk a pass, the day dropped only once its keys are gone; a job that finishes meanwhile keeps its key", async () => {
    // Day 30: 25 jobs past retention, 2 dead; the clock at day 40 puts it past the horizon.
    await ensureHistoryPartitions(db.appPool, { now: at(30) });
    const gone: string[] = [];
    for (let i = 0; i < 25; i++) gone.push(await finished(at(30, i * 1000)));
    const dead = [await finished(at(30, 90_000), { state: "DEAD" }), await finished(at(30, 91_000), { state: "DEAD" })];
    const fx = gone[3]!;
    await db.pool.query(`INSERT INTO job_effects (tenant_id, key, job_id, attempt) VALUES ('tenant_A', 'hp-fx', $1, 1)`, [fx]);
    const day = dayName(at(30));
    const keysOf = async (ids: string[]) =>
      Number((await db.pool.query<{ n: string }>(`SELECT count(*)::text AS n FROM idempotency_keys WHERE job_id = ANY($1::uuid[])`, [ids])).rows[0]!.n);

    // Days before 30 are retired first (earlier tests' days); then day 30's keys, 10 rows a pass.
    let passes = 0;
    const seen: number[] = [];
    let lateJob: string | null = null;
    for (;;) {
      const out = await pruneFinished(db.appPool, { now: at(40), keysPerPass: 10 });
      passes += 1;
      expect(passes).toBeLessThan(60);
      const retiring = await db.pool.query<{ partition_name: string }>(`SELECT partition_name FROM _porter_history_retirement`);
      if (retiring.rows[0]?.partition_name === day) {
        seen.push(out.keysDeleted);
        // Mid-way: the day is still there, its rows all readable; a job of that day finishes now.
        expect(await partitionOf(gone[0]!)).toBe(day);
        lateJob ??= await finished(at(30, 95_000), { finishedAfterMs: 10 * DAY });
      }
      if (!(await days()).includes(day)) break;
    }
    // 27 rows of the day at 10 a pass (the job finished meanwhile adds one): chunks, then the drop.
    expect(seen.length).toBeGreaterThanOrEqual(2);
    for (const k of seen) expect(k).toBeLessThanOrEqual(10);
    expect(await keysOf(gone)).toBe(0);
    expect((await db.pool.query(`SELECT 1 FROM job_effects WHERE job_id = $1`, [fx])).rowCount).toBe(0);
    for (const id of gone) expect(await partitionOf(id)).toBeNull();
    // The dead jobs and the one that finished during the retirement are kept, with their keys.
    expect(lateJob).not.toBeNull();
    for (const id of [...dead, lateJob!]) expect(await partitionOf(id)).toBe("finished_jobs_default");
    expect(await keysOf([...dead, lateJob!])).toBe(3);
    expect((await db.pool.query(`SELECT 1 FROM _porter_history_retirement`)).rowCount).toBe(0);
  });
});

/** Maintenance passes (as the runtime role) until nothing more is retired. */
const pruneUntilDone = async (now: Date) => {
  let pruned = 0;
  let partitionsDropped = 0;
  for (;;) {
    const out = await pruneFinished(db.appPool, { now });
    pruned += out.pruned;
    partitionsDropped += out.partitionsDropped;
    if (out.partitionsDropped === 0 && out.keysDeleted === 0) return { pruned, partitionsDropped };
  }
};
