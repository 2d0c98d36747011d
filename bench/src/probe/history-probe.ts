// Probe (not part of the suite): finished_jobs, job_attempts and job_events partitioned by day
// (migrations 20261202002400_partitioned_history, 20261202003000_partitioned_timeline) against
// the plain tables they were. docs/scaling.md "Partitioned history" has the numbers.
//
//   tsx bench/src/probe/history-probe.ts retention [rows=1000000]
//     the same rows (every 10th job with a failed attempt and an event) retired by dropping their
//     day (porter_history_retire, keys in chunks of 10,000 as maintenance does) and by the
//     row-by-row DELETE of the plain tables (the statement pruneFinished ran before): time, WAL,
//     the longest transaction, sizes after.
//   tsx bench/src/probe/history-probe.ts upgrade [rows=1000000]
//     migration 20261202003000_partitioned_timeline on a database whose job_attempts and
//     job_events hold `rows` rows each: its time.
//   tsx bench/src/probe/history-probe.ts claim [finished=10000000] [claims=2000]
//     claim (batch 10) + ack latency over a backlog with no finished rows, then with `finished`
//     retained rows, then again after their days were dropped.
//   tsx bench/src/probe/history-probe.ts ack [jobs=20000] [rounds=3]
//     the ack's cost: burn-downs interleaved on two databases, one partitioned, one with the plain
//     table (every migration but the partitioning one).
import { cpSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { claimJobs, completeJobs, enqueueJobs } from "@porter/core";
import { defaultMigrationsDir, migrate } from "@porter/db/migrator";
import { createPool } from "@porter/db/pool";
import { startRestartableCluster } from "@porter/db/testing/restartable-cluster";
import pg from "pg";
import { enqueueBenchBacklog } from "./bench-backlog";

// The shared server by default. PROBE_CLUSTER=1: a throwaway cluster of the probe's own
// (packages/db testing/restartable-cluster.ts), so that the WAL measured (the server's LSN moves
// with every database's writes) is the probe's alone; max_wal_size keeps checkpoints out of a run.
const cluster = process.env.PROBE_CLUSTER === "1" ? await startRestartableCluster({ database: "postgres", settings: { max_wal_size: "8GB" } }) : null;
const server = cluster ? `postgres://postgres@127.0.0.1:${cluster.port}` : "postgres://postgres@127.0.0.1:5432";
const ADMIN_URL = `${server}/postgres`;
const url = (name: string) => `${server}/${name}`;
const PARTITIONING = "20261202002400_partitioned_history";
const TIMELINE_PARTITIONING = "20261202003000_partitioned_timeline";
const DAY = 86_400_000;

const fresh = async (name: string, opts: { plain?: boolean; before?: string } = {}): Promise<pg.Pool> => {
  const admin = new pg.Client(ADMIN_URL);
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  let dir = defaultMigrationsDir();
  const before = opts.before ?? (opts.plain ? PARTITIONING : null);
  if (before) {
    dir = mkdtempSync(join(tmpdir(), "porter-plain-"));
    for (const m of readdirSync(defaultMigrationsDir()).filter((m) => m < before)) cpSync(join(defaultMigrationsDir(), m), join(dir, m), { recursive: true });
  }
  await migrate(url(name), { migrationsDir: dir });
  if (before) rmSync(dir, { recursive: true });
  const pool = createPool(url(name), { max: 4 });
  await pool.query(`INSERT INTO pools (id, worker_concurrency) VALUES ('bench', 10)`);
  await pool.query(`INSERT INTO queues (id, pool_id, retention_s) VALUES ('bench', 'bench', 86400)`);
  await pool.query(`INSERT INTO job_types (id, queue_id) VALUES ('bench.job', 'bench')`);
  await pool.query(`INSERT INTO tenants (id) VALUES ('bench')`);
  return pool;
};

/** The UUIDv7 of job `i` of `rows` made over the day from `$2` (SQL over `i`, `t`). */
const ID_SQL = `(lpad(to_hex(floor(extract(epoch FROM t) * 1000)::bigint), 12, '0') || '7' || lpad(to_hex(i), 19, '0'))::uuid`;

/**
 * `rows` finished jobs created over one day from `from` (UUIDv7 ids), with their idempotency keys
 * (prefix `key`); every 10th with a failed attempt and a `redriven` event in `timeline` tables.
 */
const fill = async (db: pg.Pool, table: string, rows: number, from: Date, key: string, timeline = { attempts: "job_attempts", events: "job_events" }) => {
  for (let lo = 1; lo <= rows; lo += 500_000) {
    const hi = Math.min(rows, lo + 500_000 - 1);
    await db.query(
      `WITH g AS (SELECT i, $2::timestamptz + (i * ($5::double precision / $1)) * interval '1 ms' AS t FROM generate_series($3::int, $4::int) i),
       f AS (
         INSERT INTO ${table} (id, job_id, job_type, queue_id, tenant_id, payload, priority, idempotency_key, state, attempt,
                               max_attempts, timeout_s, run_at, trace_id, created_at, finished_at, result)
         SELECT i, ${ID_SQL},
                'bench.job', 'bench', 'bench', '{"source_ref":"s3://bucket/objects/0123456789abcdef","v":1}', 50, $6 || i,
                'SUCCEEDED', 1, 5, 300, t, 'trace-' || i, t, t + interval '40 ms', '{"ok":true}'
           FROM g
         RETURNING tenant_id, idempotency_key, job_id, created_at)
       INSERT INTO idempotency_keys (tenant_id, idempotency_key, job_id, created_at) SELECT * FROM f`,
      [rows, from, lo, hi, DAY - 1000, key],
    );
    const g = `WITH g AS (SELECT i, $2::timestamptz + (i * ($5::double precision / $1)) * interval '1 ms' AS t FROM generate_series($3::int, $4::int) i WHERE i % 10 = 0)`;
    await db.query(
      `${g} INSERT INTO ${timeline.attempts} (job_id, attempt, worker_id, started_at, finished_at, outcome, error, retry_at)
       SELECT ${ID_SQL}, 1, 'probe-worker', t, t + interval '20 ms', 'failed', '{"code":"PROBE","class":"transient","message":"probe"}', t + interval '1 s' FROM g`,
      [rows, from, lo, hi, DAY - 1000],
    );
    await db.query(
      `${g} INSERT INTO ${timeline.events} (job_id, at, kind, attempt, actor, data) SELECT ${ID_SQL}, t, 'redriven', 1, 'probe', '{"by":"probe"}' FROM g`,
      [rows, from, lo, hi, DAY - 1000],
    );
  }
};

const walNow = async (db: pg.Pool) => (await db.query<{ l: string }>(`SELECT pg_current_wal_lsn()::text AS l`)).rows[0]!.l;
const walSince = async (db: pg.Pool, lsn: string) =>
  Number((await db.query<{ b: string }>(`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::text AS b`, [lsn])).rows[0]!.b);
const size = async (db: pg.Pool, rel: string) =>
  Number((await db.query<{ b: string }>(`SELECT coalesce(pg_total_relation_size(to_regclass($1)), 0)::text AS b`, [rel])).rows[0]!.b);
const historySize = async (db: pg.Pool, table = "finished_jobs") =>
  Number(
    (
      await db.query<{ b: string }>(
        `SELECT coalesce(sum(pg_total_relation_size(i.inhrelid)), 0)::text AS b FROM pg_inherits i WHERE i.inhparent = $1::regclass`,
        [table],
      )
    ).rows[0]!.b,
  );
const timelineSize = async (db: pg.Pool) => (await historySize(db, "job_attempts")) + (await historySize(db, "job_events"));
const mb = (b: number) => `${(b / 1024 ** 2).toFixed(1)} MB`;

// The row-by-row retention statement pruneFinished ran before the partitioning, on plain tables.
const OLD_PRUNE = (table: string) => `
  WITH at AS (SELECT $1::timestamptz AS t),
   victims AS (
     SELECT v.job_id, v.tenant_id, v.idempotency_key
       FROM queues q
       CROSS JOIN unnest(ARRAY['SUCCEEDED', 'CANCELLED', 'EXPIRED']::job_state[]) AS s(state)
       CROSS JOIN LATERAL (
         SELECT f.job_id, f.tenant_id, f.idempotency_key FROM ${table} f
          WHERE f.queue_id = q.id AND f.state = s.state
            AND f.finished_at < (SELECT t FROM at) - q.retention_s * interval '1 second'
          ORDER BY f.finished_at LIMIT $2 FOR UPDATE SKIP LOCKED) v
      LIMIT $2
   ), jobs_gone AS (DELETE FROM ${table} f USING victims v WHERE f.job_id = v.job_id RETURNING f.job_id),
   a AS (DELETE FROM attempts_plain x USING victims v WHERE x.job_id = v.job_id),
   e AS (DELETE FROM events_plain x USING victims v WHERE x.job_id = v.job_id),
   k AS (DELETE FROM idempotency_keys x USING victims v
          WHERE (x.tenant_id, x.idempotency_key) = (v.tenant_id, v.idempotency_key) AND x.job_id = v.job_id),
   fx AS (DELETE FROM job_effects x USING victims v WHERE x.job_id = v.job_id)
   SELECT count(*)::int AS n FROM jobs_gone`;

// porter_history_retire as it was before 20261202003000_partitioned_timeline (routines/partitions.sql
// at 20261202002400): the day's keys, attempts, events and effects deleted by one statement each,
// then finished_jobs' partition detached, its rows to keep moved, and dropped. Installed under
// another name for the comparison; judged by the same rule.
const BEFORE_RETIRE = `
CREATE FUNCTION porter_history_retire_before(p_now timestamptz) RETURNS TABLE (partition_name text, dropped bigint, kept bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_cutoff uuid := porter_uuidv7_floor(p_now - porter_history_horizon_s() * interval '1 second');
  v_part text;
  v_total bigint;
  v_kept bigint;
  v_cols text;
  v_keep text := format(
    '(f.state = ''DEAD'' OR f.finished_at >= %L::timestamptz - coalesce((SELECT q.retention_s FROM queues q WHERE q.id = f.queue_id), 0) * interval ''1 second'')',
    p_now);
BEGIN
  SELECT p.name INTO v_part FROM porter_history_partitions() p WHERE NOT p.is_default AND p.hi <= v_cutoff ORDER BY p.hi LIMIT 1;
  IF v_part IS NULL THEN RETURN; END IF;
  EXECUTE format('DELETE FROM idempotency_keys k USING %I f WHERE (k.tenant_id, k.idempotency_key) = (f.tenant_id, f.idempotency_key) AND k.job_id = f.job_id AND NOT %s', v_part, v_keep);
  EXECUTE format('DELETE FROM job_attempts x USING %I f WHERE x.job_id = f.job_id AND NOT %s', v_part, v_keep);
  EXECUTE format('DELETE FROM job_events x USING %I f WHERE x.job_id = f.job_id AND NOT %s', v_part, v_keep);
  EXECUTE format('DELETE FROM job_effects x USING %I f WHERE x.job_id = f.job_id AND NOT %s', v_part, v_keep);
  EXECUTE format('ALTER TABLE finished_jobs DETACH PARTITION %I', v_part);
  SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO v_cols
    FROM pg_attribute a WHERE a.attrelid = 'public.finished_jobs'::regclass AND a.attnum > 0 AND NOT a.attisdropped;
  EXECUTE format('SELECT count(*) FROM %I', v_part) INTO v_total;
  ALTER TABLE finished_jobs_default DISABLE TRIGGER USER;
  EXECUTE format('INSERT INTO finished_jobs_default (%s) SELECT %s FROM %I f WHERE %s',
                 v_cols, regexp_replace(v_cols, '([^, ]+)', 'f.\\1', 'g'), v_part, v_keep);
  GET DIAGNOSTICS v_kept = ROW_COUNT;
  ALTER TABLE finished_jobs_default ENABLE TRIGGER USER;
  EXECUTE format('DROP TABLE %I', v_part);
  RETURN QUERY SELECT v_part, v_total - v_kept, v_kept;
END $$;`;

// job_attempts and job_events as they were before 20261202003000_partitioned_timeline.
const PLAIN_TIMELINE = `
  CREATE TABLE attempts_plain (LIKE job_attempts INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
  ALTER TABLE attempts_plain ADD PRIMARY KEY (id);
  CREATE INDEX ON attempts_plain (job_id);
  CREATE INDEX ON attempts_plain (worker_id, finished_at DESC);
  CREATE TABLE events_plain (LIKE job_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
  ALTER TABLE events_plain ADD PRIMARY KEY (id);
  CREATE INDEX ON events_plain (job_id);`;

/**
 * What a retirement makes the acks wait: until `stop()`, one connection writes as a failing ack
 * does (a finished row and an attempt of a job created at `at`, a day not retired, in one
 * transaction) back to back; the longest write and how many there were.
 */
let ackSeq = 0;
const ackWriter = (db: pg.Pool, at: Date) => {
  let running = true;
  let longest = 0;
  let writes = 0;
  const done = (async () => {
    const client = await db.connect();
    try {
      while (running) {
        const t = performance.now();
        await client.query("BEGIN");
        await client.query(
          `WITH id AS (SELECT (left(porter_uuidv7_floor($2)::text, 24) || lpad(to_hex($1::bigint), 12, '0'))::uuid AS job_id),
           f AS (INSERT INTO finished_jobs (id, job_id, job_type, queue_id, tenant_id, payload, priority, idempotency_key, state, attempt,
                                            max_attempts, timeout_s, run_at, trace_id, created_at, finished_at)
                 SELECT 900000000 + $1, job_id, 'bench.job', 'bench', 'bench', '{}', 50, 'w' || $1, 'SUCCEEDED', 2, 5, 300, now(), 't', now(), now() FROM id)
           INSERT INTO job_attempts (job_id, attempt, started_at, finished_at, outcome) SELECT job_id, 1, now(), now(), 'failed' FROM id`,
          [++ackSeq, at],
        );
        await client.query("COMMIT");
        longest = Math.max(longest, performance.now() - t);
        writes += 1;
      }
    } finally {
      client.release();
    }
  })();
  return {
    stop: async () => {
      running = false;
      await done;
      const out = { writes, longestMs: Math.round(longest) };
      longest = 0;
      return out;
    },
  };
};

const retention = async (rows: number) => {
  const db = await fresh("porter_history");
  const day = new Date(Math.floor(Date.now() / DAY) * DAY + 2 * DAY); // a day partition ahead of the clock
  const later = new Date(day.getTime() + 3 * DAY);
  await db.query(`SELECT porter_history_ensure(now(), 7)`);
  // The plain table: finished_jobs as it was (the same columns and indexes, not partitioned).
  await db.query(`CREATE TABLE finished_plain (LIKE finished_jobs INCLUDING ALL)`);
  await db.query(PLAIN_TIMELINE);
  await db.query(BEFORE_RETIRE);
  let t = performance.now();
  // The day before `day`: retired by the routine as it was (one DELETE per side table).
  const dayBefore = new Date(day.getTime() - DAY);
  await fill(db, "finished_jobs", rows, dayBefore, "o");
  await fill(db, "finished_jobs", rows, day, "p");
  await fill(db, "finished_plain", rows, day, "d", { attempts: "attempts_plain", events: "events_plain" });
  console.log(`filled 3 × ${rows} rows in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  await db.query(`VACUUM ANALYZE`);

  // Before: the old routine on dayBefore, its clock such that only that day is due (horizon one day).
  await db.query(`CHECKPOINT`);
  const lsn0 = await walNow(db);
  const beforeAcks = ackWriter(db, new Date(day.getTime() + 4 * DAY));
  t = performance.now();
  const beforeClock = new Date(dayBefore.getTime() + 2 * DAY + 3_600_000);
  let beforeDropped = 0;
  for (;;) {
    const r = await db.query<{ dropped: string }>(`SELECT dropped::text FROM porter_history_retire_before($1)`, [beforeClock]);
    if (r.rows.length === 0) break;
    beforeDropped += Number(r.rows[0]!.dropped);
  }
  const beforeMs = Math.round(performance.now() - t);
  const beforeArm = { dropped: beforeDropped, ms: beforeMs, acks: await beforeAcks.stop(), wal: mb(await walSince(db, lsn0)) };
  console.log(JSON.stringify({ before: beforeArm }));
  // Its timeline partitions (rows deleted, not dropped, by the old routine) go now, outside the measure.
  for (;;) {
    const r = await db.query(`SELECT * FROM porter_history_retire($1, 10000)`, [beforeClock]);
    if (r.rows.length === 0) break;
  }
  await db.query(`VACUUM idempotency_keys`);
  const before = {
    part: await historySize(db),
    timeline: await timelineSize(db),
    plain: await size(db, "finished_plain"),
    plainTimeline: (await size(db, "attempts_plain")) + (await size(db, "events_plain")),
    keys: await size(db, "idempotency_keys"),
  };

  // Drop: the retirement of every day past the horizon (the filled one; the others are empty), a
  // step a call as maintenance runs it: 10,000 rows' keys a chunk, then the drops.
  await db.query(`CHECKPOINT`);
  let lsn = await walNow(db);
  t = performance.now();
  let dropped = 0;
  let steps = 0;
  let longestMs = 0;
  const dropAcks = ackWriter(db, new Date(day.getTime() + 4 * DAY));
  for (;;) {
    const s0 = performance.now();
    const r = await db.query<{ partition_name: string; dropped: string; is_dropped: boolean }>(
      `SELECT partition_name, dropped::text, is_dropped FROM porter_history_retire($1, 10000)`,
      [later],
    );
    const stepMs = performance.now() - s0;
    longestMs = Math.max(longestMs, stepMs);
    if (stepMs > 1000) console.log(`step ${steps + 1}: ${Math.round(stepMs)} ms ${JSON.stringify(r.rows[0] ?? null)}`);
    if (r.rows.length === 0) break;
    steps += 1;
    if (r.rows[0]!.partition_name.startsWith("finished_jobs_")) dropped += Number(r.rows[0]!.dropped);
  }
  const dropMs = performance.now() - t;
  const dropAckStall = await dropAcks.stop();
  const dropWal = await walSince(db, lsn);
  const afterDrop = { part: await historySize(db), timeline: await timelineSize(db), keys: await size(db, "idempotency_keys") };

  // DELETE: the old statement, batches of 5000 (pruneFinished's default), until nothing is left.
  await db.query(`CHECKPOINT`);
  lsn = await walNow(db);
  t = performance.now();
  let deleted = 0;
  let longestDeleteMs = 0;
  for (;;) {
    const s0 = performance.now();
    const r = await db.query<{ n: number }>(OLD_PRUNE("finished_plain"), [later, 5000]);
    longestDeleteMs = Math.max(longestDeleteMs, performance.now() - s0);
    if (r.rows[0]!.n === 0) break;
    deleted += r.rows[0]!.n;
  }
  const deleteMs = performance.now() - t;
  const deleteWal = await walSince(db, lsn);
  const plainTimeline = async () => (await size(db, "attempts_plain")) + (await size(db, "events_plain"));
  const afterDelete = { plain: await size(db, "finished_plain"), timeline: await plainTimeline(), keys: await size(db, "idempotency_keys") };
  t = performance.now();
  await db.query(`VACUUM finished_plain`);
  await db.query(`VACUUM attempts_plain`);
  await db.query(`VACUUM events_plain`);
  await db.query(`VACUUM idempotency_keys`);
  const vacuumMs = performance.now() - t;
  const afterVacuum = { plain: await size(db, "finished_plain"), timeline: await plainTimeline(), keys: await size(db, "idempotency_keys") };
  const load = (await import("node:os")).loadavg()[0]!.toFixed(1);
  console.log(
    JSON.stringify({
      rows,
      load,
      before: beforeArm,
      drop: {
        dropped,
        steps,
        ms: Math.round(dropMs),
        longestStepMs: Math.round(longestMs),
        acks: dropAckStall,
        wal: mb(dropWal),
        tableBefore: mb(before.part),
        tableAfter: mb(afterDrop.part),
        timelineBefore: mb(before.timeline),
        timelineAfter: mb(afterDrop.timeline),
        keysAfter: mb(afterDrop.keys),
      },
      delete: {
        deleted,
        ms: Math.round(deleteMs),
        longestBatchMs: Math.round(longestDeleteMs),
        wal: mb(deleteWal),
        tableBefore: mb(before.plain),
        tableAfter: mb(afterDelete.plain),
        timelineBefore: mb(before.plainTimeline),
        timelineAfter: mb(afterDelete.timeline),
        timelineAfterVacuum: mb(afterVacuum.timeline),
        vacuumMs: Math.round(vacuumMs),
        tableAfterVacuum: mb(afterVacuum.plain),
        keysBefore: mb(before.keys),
        keysAfterVacuum: mb(afterVacuum.keys),
      },
    }),
  );
  await db.end();
};

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;

/** `claims` claim calls of 10 jobs, each acked; p50/p99 of the claim and of the ack. */
const claimRun = async (db: pg.Pool, claims: number) => {
  const claimMs: number[] = [];
  const ackMs: number[] = [];
  for (let i = 0; i < claims; i++) {
    const a = performance.now();
    const jobs = await claimJobs(db, { poolId: "bench", workerId: "probe", limit: 10 });
    const b = performance.now();
    if (jobs.length === 0) break;
    await completeJobs(
      db,
      jobs.map((j) => ({ id: j.id, leaseToken: j.leaseToken, attempt: j.attempt, result: null })),
    );
    claimMs.push(b - a);
    ackMs.push(performance.now() - b);
  }
  const f = (x: number) => Number(x.toFixed(2));
  return { claim_p50: f(quantile(claimMs, 0.5)), claim_p99: f(quantile(claimMs, 0.99)), ack_p50: f(quantile(ackMs, 0.5)), ack_p99: f(quantile(ackMs, 0.99)) };
};

const claim = async (finished: number, claims: number) => {
  const db = await fresh("porter_history");
  await enqueueBenchBacklog(db, claims * 10 * 3 + 1000);
  const empty = await claimRun(db, claims);
  console.log(JSON.stringify({ finished: 0, ...empty, load: (await import("node:os")).loadavg()[0]!.toFixed(1) }));
  // Retained history: `finished` rows over the three days before tomorrow's partitions… as past days
  // are the first partition here, the rows go to days ahead, retired below by moving the clock.
  const from = new Date(Math.floor(Date.now() / DAY) * DAY + 2 * DAY);
  await db.query(`SELECT porter_history_ensure(now(), 7)`);
  const t = performance.now();
  const perDay = Math.ceil(finished / 3);
  for (let d = 0; d < 3; d++) await fill(db, "finished_jobs", perDay, new Date(from.getTime() + d * DAY), `h${d}-`);
  await db.query(`VACUUM ANALYZE`);
  console.log(`filled ${3 * perDay} rows in ${((performance.now() - t) / 1000).toFixed(0)} s, history ${mb(await historySize(db))}`);
  const full = await claimRun(db, claims);
  console.log(JSON.stringify({ finished: 3 * perDay, ...full, load: (await import("node:os")).loadavg()[0]!.toFixed(1) }));
  const d0 = performance.now();
  for (;;) {
    const r = await db.query(`SELECT * FROM porter_history_retire($1)`, [new Date(from.getTime() + 5 * DAY)]);
    if (r.rows.length === 0) break;
  }
  console.log(`retired in ${((performance.now() - d0) / 1000).toFixed(1)} s`);
  const after = await claimRun(db, claims);
  console.log(JSON.stringify({ finished: "dropped", ...after, load: (await import("node:os")).loadavg()[0]!.toFixed(1) }));
  await db.end();
};

/** One burn-down of `jobs` jobs (claim 100, ack 100) on `db`: ack ms per call and jobs/s. */
let burns = 0;
const burn = async (db: pg.Pool, jobs: number) => {
  // Keys of their own per burn-down (the shared backlog's keys would deduplicate a second one).
  burns += 1;
  for (let i = 0; i < jobs; i += 1000) {
    const batch = Array.from({ length: Math.min(1000, jobs - i) }, (_, k) => ({
      job_type: "bench.job",
      tenant_id: "bench",
      payload: { k: i + k },
      idempotency_key: `b${burns}-${i + k}`,
    }));
    await enqueueJobs(db, batch);
  }
  await db.query(`VACUUM ANALYZE jobs`);
  let ackMs = 0;
  let calls = 0;
  let done = 0;
  const t0 = performance.now();
  for (;;) {
    const claimed = await claimJobs(db, { poolId: "bench", workerId: "probe", limit: 100 });
    if (claimed.length === 0) break;
    const b = performance.now();
    await completeJobs(
      db,
      claimed.map((j) => ({ id: j.id, leaseToken: j.leaseToken, attempt: j.attempt, result: null })),
    );
    ackMs += performance.now() - b;
    calls += 1;
    done += claimed.length;
  }
  return { ackMsPerCall: ackMs / calls, jobsPerS: done / ((performance.now() - t0) / 1000) };
};

const ack = async (jobs: number, rounds: number) => {
  const part = await fresh("porter_history");
  const plain = await fresh("porter_history_plain", { plain: true });
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const a = await burn(part, jobs);
    const b = await burn(plain, jobs);
    ratios.push(a.ackMsPerCall / b.ackMsPerCall);
    console.log(
      JSON.stringify({
        round: r + 1,
        partitioned: { ackMsPerCall: a.ackMsPerCall.toFixed(2), jobsPerS: Math.round(a.jobsPerS) },
        plain: { ackMsPerCall: b.ackMsPerCall.toFixed(2), jobsPerS: Math.round(b.jobsPerS) },
        ackRatio: (a.ackMsPerCall / b.ackMsPerCall).toFixed(3),
        load: (await import("node:os")).loadavg()[0]!.toFixed(1),
      }),
    );
  }
  console.log(`median ack ratio partitioned / plain: ${quantile(ratios, 0.5).toFixed(3)}`);
  await part.end();
  await plain.end();
};

/** Migration 20261202003000_partitioned_timeline over `rows` attempts and `rows` events: its time. */
const upgrade = async (rows: number) => {
  const db = await fresh("porter_history_upgrade", { before: TIMELINE_PARTITIONING });
  const from = new Date(Date.now() - 3 * DAY);
  for (let lo = 1; lo <= rows; lo += 500_000) {
    const hi = Math.min(rows, lo + 500_000 - 1);
    const g = `WITH g AS (SELECT i, $2::timestamptz + (i * ($5::double precision / $1)) * interval '1 ms' AS t FROM generate_series($3::int, $4::int) i)`;
    await db.query(
      `${g} INSERT INTO job_attempts (job_id, attempt, worker_id, started_at, finished_at, outcome, error)
       SELECT ${ID_SQL}, 1, 'probe-worker', t, t, 'failed', '{"code":"PROBE"}' FROM g`,
      [rows, from, lo, hi, 2 * DAY],
    );
    await db.query(`${g} INSERT INTO job_events (job_id, at, kind, actor) SELECT ${ID_SQL}, t, 'redriven', 'probe' FROM g`, [rows, from, lo, hi, 2 * DAY]);
  }
  await db.query(`VACUUM ANALYZE job_attempts`);
  await db.query(`VACUUM ANALYZE job_events`);
  const sizes = mb((await size(db, "job_attempts")) + (await size(db, "job_events")));
  await db.end();
  const t = performance.now();
  await migrate(url("porter_history_upgrade"));
  const ms = performance.now() - t;
  // The old tables, now the first partitions, keep no grant of the runtime role (porter_app here).
  const check = new pg.Client(url("porter_history_upgrade"));
  await check.connect();
  const { rows: grants } = await check.query<{ t: string; can: boolean }>(
    `SELECT t, has_table_privilege('porter_app', t, 'SELECT') AS can FROM unnest(ARRAY['job_attempts_p_first', 'job_events_p_first', 'job_attempts']) t`,
  );
  const { rows: counts } = await check.query<{ a: string; e: string }>(
    `SELECT (SELECT count(*) FROM job_attempts)::text AS a, (SELECT count(*) FROM job_events)::text AS e`,
  );
  await check.end();
  console.log(
    JSON.stringify({ rows, tables: sizes, migrateMs: Math.round(ms), grants, counts: counts[0], load: (await import("node:os")).loadavg()[0]!.toFixed(1) }),
  );
};

const [mode, a1, a2] = process.argv.slice(2);
if (mode === "retention") await retention(Number(a1 ?? 1_000_000));
else if (mode === "claim") await claim(Number(a1 ?? 10_000_000), Number(a2 ?? 2000));
else if (mode === "ack") await ack(Number(a1 ?? 20_000), Number(a2 ?? 3));
else if (mode === "upgrade") await upgrade(Number(a1 ?? 1_000_000));
else throw new Error("usage: history-probe.ts retention [rows] | upgrade [rows] | claim [finished] [claims] | ack [jobs] [rounds]");
await cluster?.stop();
