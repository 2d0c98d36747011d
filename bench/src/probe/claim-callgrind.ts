// Probe (not part of the suite): PostgreSQL's instructions per claimed job, by variant of the
// schema or of the claim's routines, counted exactly (valgrind's callgrind) in a single-user backend,
// as enqueue-callgrind.ts does for the enqueue: deterministic where wall and CPU time swing ±20%.
// A template data directory (initdb, migrate, the "bench" pool/queue/job type/tenant, JOBS ready jobs
// as split.ts makes them, VACUUM ANALYZE) is copied per count; the script is the variant's schema
// change, then `warm` (and for the second count `warm + measured`) claims of LIMIT rows through
// porter_claim, each its own transaction; the difference of the two counts is the measured part.
// Job ids are UUIDv7-like (20 per millisecond, random within it), as producers send them, so
// jobs_job_id_key grows at its right edge as it does in use.
// TENANTS=3 spreads the jobs over tenant_A/B/C weighted 1/1/2 (the policy mix); CAPPED=1 adds an
// empty capped queue to the pool (the claim's 'queues' path). ONLY=a,b runs only those variants.
//   [ROUTINES=name=file.sql] [ONLY=base,no-running-idx] npx tsx bench/src/probe/claim-callgrind.ts [warm] [measured]
// Needs valgrind and runs as root (PostgreSQL as the `postgres` user).
import { readFileSync } from "node:fs";
import { CLAIM_COLUMNS } from "@porter/core/sql/claim-jobs";
import { COMPLETE_SQL_FOR_PROBES } from "@porter/core/sql/complete-jobs";
import { countInstructions, migratedTemplate } from "./single-user-callgrind";

const [warm, measured] = [Number(process.argv[2] ?? 4), Number(process.argv[3] ?? 8)];
const LIMIT = Number(process.env.LIMIT ?? 450);
const JOBS = Number(process.env.JOBS ?? 20_000);
const TENANTS = Number(process.env.TENANTS ?? 1);

// `ack`: the ack statement this variant prepares in place of core's (ACKS=1).
type Variant = { name: string; schema?: string; ack?: (sql: string) => string };
const FF45 =
  "ALTER INDEX jobs_pkey SET (fillfactor = 45); ALTER INDEX jobs_job_id_key SET (fillfactor = 45); REINDEX INDEX jobs_pkey; REINDEX INDEX jobs_job_id_key";
const routine = (file: string) => readFileSync(file, "utf8");
// The ack's text cut at its CTEs: `fin` (the finished row), then `flow_g`, `flow` and `flow_hist`
// (the rollups: complete-jobs.ts, flowEndedSql), the last, in this order, before the final SELECT.
const cut = (sql: string, from: string, to?: string): string => {
  const a = sql.indexOf(`, ${from} AS (`);
  const b = to ? sql.indexOf(`, ${to} AS (`) : sql.lastIndexOf(" SELECT id::text FROM done");
  if (a < 0 || b < a) throw new Error(`the ack has no CTE ${from} before ${to ?? "its SELECT"}`);
  return sql.slice(0, a) + (to ? sql.slice(b) : " SELECT id::text FROM done");
};
const FINISHED_TRIGGERS = ["finished_jobs_stream_insert", "finished_jobs_webhook_outbox", "finished_jobs_dlq_record", "finished_jobs_dlq_stamp"];
const ACK_VARIANTS: Variant[] = [
  { name: "ack-no-flow", ack: (sql) => cut(sql, "flow_g") },
  { name: "ack-no-hist", ack: (sql) => cut(sql, "flow_hist") },
  { name: "ack-no-finished", ack: (sql) => cut(sql, "fin", "flow_g") },
  { name: "ack-no-fin-triggers", schema: FINISHED_TRIGGERS.map((t) => `DROP TRIGGER ${t} ON finished_jobs`).join("; ") },
  { name: "ack-no-fin-stream", schema: "DROP TRIGGER finished_jobs_stream_insert ON finished_jobs" },
  { name: "ack-no-fin-webhook", schema: "DROP TRIGGER finished_jobs_webhook_outbox ON finished_jobs" },
  { name: "ack-no-fin-dlq", schema: "DROP TRIGGER finished_jobs_dlq_record ON finished_jobs; DROP TRIGGER finished_jobs_dlq_stamp ON finished_jobs" },
  {
    name: "ack-fin-stream-noop",
    schema: "CREATE OR REPLACE FUNCTION porter_stream_finished_insert() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$",
  },
  { name: "ack-stream-no-pkey", schema: "ALTER TABLE job_stream DROP CONSTRAINT job_stream_pkey" },
  // The stream row's arrays (one row per statement and tenant: ~6 KB of job ids at 400 jobs) past
  // the TOAST threshold: stored out of line without a compression attempt, or compressed by lz4.
  {
    name: "ack-stream-external",
    schema: ["job_ids", "job_types", "attempts", "progresses", "failures"]
      .map((c) => `ALTER TABLE job_stream ALTER COLUMN ${c} SET STORAGE EXTERNAL`)
      .join("; "),
  },
  {
    name: "ack-stream-mixed",
    schema: [
      "ALTER TABLE job_stream ALTER COLUMN job_ids SET STORAGE EXTERNAL",
      "ALTER TABLE job_stream ALTER COLUMN job_types SET COMPRESSION lz4",
      "ALTER TABLE job_stream ALTER COLUMN attempts SET COMPRESSION lz4",
      "ALTER TABLE job_stream ALTER COLUMN progresses SET COMPRESSION lz4",
      "ALTER TABLE job_stream ALTER COLUMN failures SET COMPRESSION lz4",
    ].join("; "),
  },
  {
    name: "ack-stream-lz4",
    schema: ["job_ids", "job_types", "attempts", "progresses", "failures"]
      .map((c) => `ALTER TABLE job_stream ALTER COLUMN ${c} SET COMPRESSION lz4`)
      .join("; "),
  },
  { name: "ack-no-fin-queue-idx", schema: "DROP INDEX finished_jobs_queue_id_state_finished_at_idx" },
  { name: "ack-no-fin-tenant-idx", schema: "DROP INDEX finished_jobs_tenant_id_finished_at_idx" },
  { name: "ack-no-fin-dlq-idx", schema: "DROP INDEX finished_jobs_dlq_fingerprint_idx" },
];
const VARIANTS: Variant[] = [
  { name: "base" },
  { name: "no-running-idx", schema: "DROP INDEX jobs_running_idx" },
  { name: "no-job-id-idx", schema: "DROP INDEX jobs_job_id_key" },
  { name: "no-update-trigger", schema: "DROP TRIGGER jobs_stream_update ON jobs" },
  { name: "reindex", schema: "REINDEX INDEX jobs_pkey; REINDEX INDEX jobs_job_id_key" },
  { name: "ff45", schema: FF45 },
  { name: "job-id-nonunique", schema: "DROP INDEX jobs_job_id_key; CREATE INDEX jobs_job_id_key ON jobs (job_id)" },
  {
    name: "ff45-nonunique",
    schema:
      "DROP INDEX jobs_job_id_key; CREATE INDEX jobs_job_id_key ON jobs (job_id) WITH (fillfactor = 45); ALTER INDEX jobs_pkey SET (fillfactor = 45); REINDEX INDEX jobs_pkey",
  },
  { name: "stream-seq-cache", schema: "ALTER SEQUENCE job_stream_id_seq CACHE 1000" },
  // The ack's parts (ACKS=1): each left out, to price it.
  ...(process.env.ACKS === "1" ? ACK_VARIANTS : []),
  // ROUTINES=name=file.sql,…: variants of the claim's routines (the file applied over the migrated ones).
  ...(process.env.ROUTINES ?? "")
    .split(",")
    .filter(Boolean)
    .map((spec) => {
      const [name, file] = spec.split("=");
      return { name: name!, schema: routine(file!) };
    }),
  // ROUTINES_FF45=…: the same, on indexes at fillfactor 45.
  ...(process.env.ROUTINES_FF45 ?? "")
    .split(",")
    .filter(Boolean)
    .map((spec) => {
      const [name, file] = spec.split("=");
      return { name: name!, schema: `${FF45}; ${routine(file!)}` };
    }),
].filter((v) => !process.env.ONLY || process.env.ONLY.split(",").includes(v.name));

const TEMPLATE = await migratedTemplate("claim-cg", async (seed) => {
  await seed.query(`INSERT INTO pools (id, worker_concurrency) VALUES ('bench', 24)`);
  await seed.query(`INSERT INTO queues (id, pool_id) VALUES ('bench', 'bench')`);
  if (process.env.CAPPED === "1") await seed.query(`INSERT INTO queues (id, pool_id, concurrency_cap) VALUES ('capped', 'bench', 4)`);
  await seed.query(`INSERT INTO job_types (id, queue_id) VALUES ('bench.job', 'bench')`);
  const tenants =
    TENANTS === 1
      ? [{ id: "bench", weight: 1 }]
      : [
          { id: "tenant_A", weight: 1 },
          { id: "tenant_B", weight: 1 },
          { id: "tenant_C", weight: 2 },
        ];
  for (const t of tenants) {
    await seed.query(`INSERT INTO tenants (id, weight) VALUES ($1, $2)`, [t.id, t.weight]);
    await seed.query(`INSERT INTO fair_clocks (queue_id, tenant_id, last_vft) VALUES ('bench', $1, 0)`, [t.id]);
  }
  await seed.query(
    `INSERT INTO jobs (job_id, job_type, queue_id, tenant_id, payload, priority, idempotency_key, state,
                     max_attempts, timeout_s, run_at, trace_id, vft)
   SELECT (lpad(to_hex(1700000000000 + g / 20), 12, '0') || '7' || substr(md5(g::text), 2, 3) || '8' || substr(md5(g::text), 5, 15))::uuid,
          'bench.job', 'bench', ($2::text[])[1 + g % array_length($2::text[], 1)], jsonb_build_object('k', g), 50,
          'k-' || g, 'READY', 5, 300, now() - interval '1 hour', md5(g::text), g
     FROM generate_series(1, $1) g`,
    [JOBS, tenants.map((t) => t.id)],
  );
  await seed.query(`VACUUM ANALYZE jobs`);
});

const NOW = "2030-01-01T00:00:00Z"; // after every run_at the template wrote
// ACKS=1 (one tenant only): after each claim, the previous claim's jobs are acked by core's ack
// statement (prepared once, as a worker's connection does). With one tenant, claim k takes the jobs
// with ids 450k+1 … 450k+450 (claim order is id order) under lease token k+1.
const ACKS = process.env.ACKS === "1";
if (ACKS && TENANTS !== 1) throw new Error("ACKS=1 needs TENANTS=1");
// ACK_BATCH: jobs per ack statement (default 150; a worker's completer flushes every 5 ms, at most
// 500). Above ~300 of this table's 20k rows the planner deletes by a hash join over a scan of `jobs`,
// which a queue of a realistic depth never chooses.
const ACK_BATCH = Number(process.env.ACK_BATCH ?? 150);
// OUTPUT=all (core's CLAIM_COLUMNS) or a column list: the claim's rows are also turned into text,
// column by column, as a worker's claim sends them (each column's output function; the wire's
// framing aside). Without it only the claim's work is counted.
const OUTPUT = process.env.OUTPUT === "all" ? CLAIM_COLUMNS : process.env.OUTPUT;
const ack = (k: number): string[] => {
  const ids = Array.from({ length: LIMIT }, (_, i) => k * LIMIT + i + 1);
  const chunks: string[] = [];
  for (let at = 0; at < ids.length; at += ACK_BATCH) {
    const chunk = ids.slice(at, at + ACK_BATCH);
    const list = (f: (id: number) => string) => `'{${chunk.map(f).join(",")}}'`;
    chunks.push(`EXECUTE ack(${list(String)}, ${list(() => String(k + 1))}, ${list(() => '"null"')}, '${NOW}', ${list(() => "1")}, ${list(() => "NULL")})`);
  }
  return chunks;
};
const script = (v: Variant, n: number): string => {
  // The single-user backend ends a statement at ";" and a blank line, inside dollar quotes too.
  const parts = v.schema ? [v.schema.replaceAll(";\n\n", ";\n \n")] : [];
  if (ACKS) parts.push(`PREPARE ack AS ${v.ack ? v.ack(COMPLETE_SQL_FOR_PROBES) : COMPLETE_SQL_FOR_PROBES}`);
  for (let i = 0; i < n; i++) {
    parts.push(`SELECT count(*) FROM porter_claim('bench', 'w1', ${LIMIT}, '${NOW}', 24) c${OUTPUT ? ` WHERE concat_ws(',', ${OUTPUT}) IS NOT NULL` : ""}`);
    if (ACKS && i > 0) parts.push(...ack(i - 1));
  }
  return `${parts.join(";\n\n")};\n\n`;
};

const count = (v: Variant, n: number): { total: number; claimed: number } => {
  const { total, stdout } = countInstructions(v.name, TEMPLATE, "claim-cg", script(v, n));
  const claimed = [...stdout.matchAll(/count = "(\d+)"/g)].reduce((s, m) => s + Number(m[1]), 0);
  const acked = [...stdout.matchAll(/\bid = "\d+"/g)].length;
  if (ACKS && acked !== (n - 1) * LIMIT) throw new Error(`${v.name}: ${acked} jobs acked of ${(n - 1) * LIMIT}`);
  return { total, claimed };
};

const results: Array<{ v: Variant; perJob: number }> = [];
for (const v of VARIANTS) {
  const a = count(v, warm);
  const b = count(v, warm + measured);
  const perJob = (b.total - a.total) / (b.claimed - a.claimed);
  results.push({ v, perJob });
  console.log(
    `${v.name.padEnd(20)} ${perJob.toFixed(0)} instructions per claimed job (${b.claimed - a.claimed} jobs; ×${(perJob / results[0]!.perJob).toFixed(3)} of ${results[0]!.v.name})`,
  );
}
