// Probe (not part of the suite): what one effect costs the database, statement by statement, with
// no worker around it. One connection per variant, all variants' operations interleaved one by one
// (A, B, C, A, B, C …) so load swings hit them alike; each operation is one job's write: `plain`
// is bench (g)'s INSERT … ON CONFLICT autocommitted, the others wrap it as ctx.effect would. At
// the end: wall time per operation (median) and each connection's backend CPU per operation
// (/proc/<pid>/stat), and the WAL the database wrote per operation of each variant (run alone
// after the interleaved part, pg_current_wal_lsn before and after: other databases' WAL included).
//   npx tsx bench/src/probe/effect-micro.ts <ops per variant> [variant,…]
import { readFileSync } from "node:fs";
import { claimJobs } from "@porter/core";
import { migrate } from "@porter/db/migrator";
import { createPool } from "@porter/db/pool";
import pg from "pg";
import { EFFECTS_TABLE_SQL } from "../systems/types";
import { EFFECT_SQL } from "../worker/job-log";
import { enqueueBenchBacklog } from "./bench-backlog";

const DB = "porter_perf_effect_micro";
const ADMIN = "postgres://postgres@127.0.0.1:5432/postgres";
const URL = `postgres://postgres@127.0.0.1:5432/${DB}`;
const ops = Number(process.argv[2] ?? 500);
const ALL = [
  "plain",
  "effect",
  "bare",
  "noresult",
  "nofence",
  "sqlclaim",
  "adv",
  "check",
  "claimfn",
  "commitfn",
  "scalar",
  "close",
  "closenopipe",
  "one",
  "onepipe",
  "oneplain",
  "oneclose",
] as const;
type Variant = (typeof ALL)[number];
const variants = (process.argv[3]?.split(",") ?? [...ALL]) as Variant[];

const admin = new pg.Client(ADMIN);
await admin.connect();
await admin.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
await admin.query(`CREATE DATABASE ${DB}`);
await migrate(URL);
const setup = createPool(URL, { max: 2 });
await setup.query(`INSERT INTO pools (id, worker_concurrency) VALUES ('bench', 10000)`);
await setup.query(`INSERT INTO queues (id, pool_id) VALUES ('bench', 'bench')`);
await setup.query(`INSERT INTO job_types (id, queue_id) VALUES ('bench.job', 'bench')`);
await setup.query(`INSERT INTO tenants (id) VALUES ('bench')`);
await setup.query(EFFECTS_TABLE_SQL);
// one, onepipe: the lease check and the ledger row before the statement, all in one round trip;
// oneplain: the same with the ledger row inserted without ON CONFLICT (a duplicate raises 23505).
const openFunction = (name: string, isOnConflict: boolean) => `
CREATE FUNCTION ${name}(p_id bigint, p_token bigint, p_attempt integer, p_tenant_id text, p_key text, p_job_id uuid)
RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM 1 FROM jobs j WHERE j.id = p_id AND j.lease_token = p_token AND j.attempt = p_attempt AND j.state::text = 'RUNNING' FOR SHARE;
  IF NOT FOUND THEN RAISE EXCEPTION 'stale' USING ERRCODE = 'PR409'; END IF;
  INSERT INTO job_effects (tenant_id, key, job_id, attempt) VALUES (p_tenant_id, p_key, p_job_id, p_attempt)${isOnConflict ? " ON CONFLICT DO NOTHING" : ""};
  ${isOnConflict ? "IF NOT FOUND THEN RAISE EXCEPTION 'applied' USING ERRCODE = 'PR208'; END IF;" : ""}
END $$;`;
await setup.query(openFunction("porter_effect_open", true));
await setup.query(openFunction("porter_effect_open2", false));
// adv: the key held by a transaction-level advisory lock, the ledger row written once, at commit.
await setup.query(`
CREATE FUNCTION adv_claim(p_id bigint, p_token bigint, p_attempt integer, p_tenant_id text, p_key text)
RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE v_result jsonb;
BEGIN
  PERFORM 1 FROM jobs j WHERE j.id = p_id AND j.lease_token = p_token AND j.attempt = p_attempt AND j.state = 'RUNNING';
  IF NOT FOUND THEN RETURN '{"held":false}'; END IF;
  PERFORM pg_advisory_xact_lock(hashtextextended(p_tenant_id || chr(1) || p_key, 0));
  SELECT e.result INTO v_result FROM job_effects e WHERE e.tenant_id = p_tenant_id AND e.key = p_key;
  IF NOT FOUND THEN RETURN '{"held":true,"claimed":true}'; END IF;
  RETURN jsonb_build_object('held', true, 'claimed', false, 'result', v_result);
END $$;
CREATE FUNCTION scalar_claim(p_id bigint, p_token bigint, p_attempt integer, p_tenant_id text, p_key text, p_job_id uuid)
RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE v_result jsonb;
BEGIN
  PERFORM 1 FROM jobs j WHERE j.id = p_id AND j.lease_token = p_token AND j.attempt = p_attempt AND j.state = 'RUNNING';
  IF NOT FOUND THEN RETURN 'stale'; END IF;
  INSERT INTO job_effects (tenant_id, key, job_id, attempt) VALUES (p_tenant_id, p_key, p_job_id, p_attempt) ON CONFLICT DO NOTHING;
  IF FOUND THEN RETURN 'claimed'; END IF;
  SELECT e.result INTO v_result FROM job_effects e WHERE e.tenant_id = p_tenant_id AND e.key = p_key;
  RETURN coalesce(v_result::text, 'null');
END $$;
CREATE FUNCTION adv_commit(p_id bigint, p_token bigint, p_attempt integer, p_tenant_id text, p_key text, p_job_id uuid, p_result jsonb)
RETURNS void LANGUAGE plpgsql VOLATILE AS $$
DECLARE v_started timestamptz;
BEGIN
  SELECT j.started_at INTO v_started FROM jobs j
   WHERE j.id = p_id AND j.lease_token = p_token AND j.attempt = p_attempt AND j.state = 'RUNNING' FOR SHARE;
  IF NOT FOUND THEN RAISE EXCEPTION 'stale' USING ERRCODE = 'PR409'; END IF;
  IF v_started IS NULL THEN UPDATE jobs SET started_at = clock_timestamp() WHERE id = p_id AND started_at IS NULL; END IF;
  INSERT INTO job_effects (tenant_id, key, job_id, attempt, result) VALUES (p_tenant_id, p_key, p_job_id, p_attempt, p_result);
END $$;`);
const total = ops * variants.length * 2;
await enqueueBenchBacklog(setup, total);
const jobs = [];
while (jobs.length < total) {
  const got = await claimJobs(setup, { poolId: "bench", workerId: "micro", limit: 500 });
  if (got.length === 0) break;
  jobs.push(...got);
}
await setup.query(`UPDATE jobs SET started_at = now() WHERE state = 'RUNNING'`);
await setup.query(`VACUUM ANALYZE jobs`);
await setup.end();

const cpuMs = (pid: number): number => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) * 10;
};

type Job = (typeof jobs)[number];
const lit = (c: pg.Client, s: string) => c.escapeLiteral(s);
const runOp = async (v: Variant, c: pg.Client, job: Job, k: number): Promise<void> => {
  if (v === "plain") {
    await c.query(EFFECT_SQL, [k]);
    return;
  }
  const lease = `${job.id}, ${job.leaseToken}, ${job.attempt}`;
  const key = `${lit(c, job.tenantId)}, ${lit(c, `effect-${k}`)}`;
  if (v === "bare") {
    await c.query("BEGIN; SELECT 1");
    await c.query(EFFECT_SQL, [k]);
    await c.query("SELECT 1; COMMIT");
    return;
  }
  if (v === "check") {
    await c.query(
      `BEGIN; SELECT 1 FROM jobs j WHERE j.id = ${job.id} AND j.lease_token = ${job.leaseToken} AND j.attempt = ${job.attempt} AND j.state = 'RUNNING'`,
    );
    await c.query(EFFECT_SQL, [k]);
    await c.query("SELECT 1; COMMIT");
    return;
  }
  if (v === "close" || v === "closenopipe") {
    // txOnly: BEGIN written with fn's statement behind it (pipelined on "close"), the claim in the commit message.
    (c as pg.Client & { pipeline: boolean }).pipeline = v === "close";
    const begun = c.query("BEGIN");
    const n = (await c.query(EFFECT_SQL, [k])).rowCount;
    await begun;
    await c.query(`SELECT porter_effect_close(${lease}, ${key}, ${lit(c, job.jobId)}::uuid, '${n}'::jsonb); COMMIT`);
    (c as pg.Client & { pipeline: boolean }).pipeline = false;
    return;
  }
  if (v === "one") {
    await c.query(`SELECT porter_effect_open(${lease}, ${key}, ${lit(c, job.jobId)}::uuid); ${EFFECT_SQL.replace("$1", String(k))}`);
    return;
  }
  if (v === "oneplain") {
    await c.query(`${EFFECT_SQL.replace("$1", String(k))}; SELECT porter_effect_open2(${lease}, ${key}, ${lit(c, job.jobId)}::uuid)`);
    return;
  }
  if (v === "oneclose") {
    await c.query(`${EFFECT_SQL.replace("$1", String(k))}; SELECT porter_effect_close(${lease}, ${key}, ${lit(c, job.jobId)}::uuid, NULL)`);
    return;
  }
  if (v === "onepipe") {
    const p = c as pg.Client & { pipeline: boolean };
    p.pipeline = true;
    const all = [
      c.query("BEGIN"),
      c.query(`SELECT porter_effect_open(${lease}, ${key}, ${lit(c, job.jobId)}::uuid)`),
      c.query(EFFECT_SQL, [k]),
      c.query("COMMIT"),
    ];
    await Promise.all(all);
    p.pipeline = false;
    return;
  }
  if (v === "claimfn" || v === "scalar") {
    if (v === "claimfn") await c.query(`BEGIN; SELECT * FROM porter_effect_claim(${lease}, ${key}, ${lit(c, job.jobId)}::uuid)`);
    else await c.query(`BEGIN; SELECT scalar_claim(${lease}, ${key}, ${lit(c, job.jobId)}::uuid)`);
    const n = (await c.query(EFFECT_SQL, [k])).rowCount;
    if (v === "claimfn") await c.query("SELECT 1; COMMIT");
    else await c.query(`SELECT porter_effect_commit(${lease}, ${key}, '${n}'::jsonb); COMMIT`);
    return;
  }
  if (v === "commitfn") {
    await c.query("BEGIN; SELECT 1");
    await c.query(EFFECT_SQL, [k]);
    await c.query(`SELECT porter_effect_commit(${lease}, ${key}, NULL); COMMIT`);
    return;
  }
  if (v === "adv") {
    await c.query(`BEGIN; SELECT adv_claim(${lease}, ${key})`);
    const n = (await c.query(EFFECT_SQL, [k])).rowCount;
    await c.query(`SELECT adv_commit(${lease}, ${key}, ${lit(c, job.jobId)}::uuid, '${n}'::jsonb); COMMIT`);
    return;
  }
  if (v === "sqlclaim") {
    const [t, kk] = [lit(c, job.tenantId), lit(c, `effect-${k}`)];
    await c.query(`BEGIN; WITH held AS (SELECT 1 FROM jobs j WHERE j.id = ${job.id} AND j.lease_token = ${job.leaseToken} AND j.attempt = ${job.attempt} AND j.state = 'RUNNING'),
 ins AS (INSERT INTO job_effects (tenant_id, key, job_id, attempt) SELECT ${t}, ${kk}, ${lit(c, job.jobId)}::uuid, ${job.attempt} FROM held ON CONFLICT DO NOTHING RETURNING 1)
 SELECT EXISTS (SELECT FROM held) AS held, EXISTS (SELECT FROM ins) AS claimed; SELECT result FROM job_effects WHERE tenant_id = ${t} AND key = ${kk}`);
    const n = (await c.query(EFFECT_SQL, [k])).rowCount;
    await c.query(`SELECT porter_effect_commit(${lease}, ${key}, '${n}'::jsonb); COMMIT`);
    return;
  }
  await c.query(`BEGIN; SELECT * FROM porter_effect_claim(${lease}, ${key}, ${lit(c, job.jobId)}::uuid)`);
  const n = (await c.query(EFFECT_SQL, [k])).rowCount;
  if (v === "nofence") await c.query(`UPDATE job_effects SET result = '${n}'::jsonb WHERE tenant_id = ${key.replace(", ", " AND key = ")}; COMMIT`);
  else await c.query(`SELECT porter_effect_commit(${lease}, ${key}, ${v === "noresult" ? "NULL" : `'${n}'::jsonb`}); COMMIT`);
};

const conns = new Map<Variant, { c: pg.Client; pid: number; cpu0: number; times: number[] }>();
for (const v of variants) {
  const c = new pg.Client(URL);
  await c.connect();
  const pid = (await c.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
  conns.set(v, { c, pid, cpu0: cpuMs(pid), times: [] });
}
console.log(
  `load average ${(await import("node:os"))
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
let next = 0;
for (let i = 0; i < ops; i++) {
  for (const v of variants) {
    const s = conns.get(v)!;
    const job = jobs[next]!;
    const t = performance.now();
    await runOp(v, s.c, job, next++);
    s.times.push(performance.now() - t);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const base = conns.get(variants[0]!)!;
const baseCpu = (cpuMs(base.pid) - base.cpu0) / ops;
for (const v of variants) {
  const s = conns.get(v)!;
  const cpu = (cpuMs(s.pid) - s.cpu0) / ops;
  console.log(
    `${v.padEnd(10)} wall median ${median(s.times).toFixed(3)} ms (${(median(base.times) / median(s.times)).toFixed(2)}× of ${variants[0]}'s rate), backend CPU ${cpu.toFixed(3)} ms/op (${(cpu / baseCpu).toFixed(2)}×)`,
  );
}
// WAL per operation, each variant alone.
for (const v of variants) {
  const s = conns.get(v)!;
  const n = Math.min(200, Math.floor((jobs.length - next) / variants.length));
  const lsn0 = (await admin.query("SELECT pg_current_wal_lsn() AS l")).rows[0].l;
  for (let i = 0; i < n; i++) await runOp(v, s.c, jobs[next]!, next++);
  const bytes = (await admin.query("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1) AS b", [lsn0])).rows[0].b;
  console.log(`${v.padEnd(10)} WAL ${(Number(bytes) / n).toFixed(0)} B/op (cluster-wide, ${n} ops)`);
}
for (const s of conns.values()) await s.c.end();
await admin.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
await admin.end();
