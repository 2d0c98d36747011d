// Probe (not part of the suite): PostgreSQL's instructions per enqueued job, by variant of the
// enqueue's SQL or schema, counted exactly (valgrind's callgrind) in a single-user backend:
// deterministic, so the machine's load cannot hide a difference of 1% (wall time and CPU time here
// swing ±20%). Each variant runs on a copy of a migrated, seeded data directory (made here first:
// initdb, a server started on a free port, migrate, the "bench" pool/queue/job type/tenant, the jobs
// prepared against it, stop) the same script: its schema change, `warm` transactions of 1000 jobs
// (statements of CHUNK rows, 250 as `enqueueJobs` sends them), and for the second count `measured`
// more; the difference of the two counts is the measured part. ONLY=a,b runs only those variants.
// The single-user backend reads its script a character at a time, a cost that grows with the
// statement's length: compare variants at the same CHUNK (docs/performance.md, batch enqueue).
//   [ONLY=base,plain] [CHUNK=250] npx tsx bench/src/probe/enqueue-callgrind.ts [warm] [measured]
// Needs valgrind and runs as root (PostgreSQL as the `postgres` user).
import { PolicyCache } from "@porter/core";
import { chunkArrays, INSERT_PLAIN_SQL_FOR_PROBES, INSERT_SQL_FOR_PROBES } from "@porter/core/sql/enqueue-insert";
import { type Prepared, prepareEnqueue } from "@porter/core/sql/enqueue-prepare";
import { countInstructions, migratedTemplate } from "./single-user-callgrind";

const [warm, measured] = [Number(process.argv[2] ?? 3), Number(process.argv[3] ?? 2)];
/** Rows per statement (CHUNK=…; enqueueJobs sends 250). */
const CHUNK = Number(process.env.CHUNK ?? 250);

/** One enqueue chunk as SQL (the statement's parameters as literals). */
type Variant = { name: string; schema?: string; prepare: string; execute: (chunk: Prepared[], now: Date) => string };
const lit = (s: string) => `$q$${s}$q$`;
const base = (name: string, text: string, schema?: string): Variant => ({
  name,
  schema,
  prepare: `PREPARE ins AS ${text}`,
  execute: (chunk, now) =>
    `EXECUTE ins(${[
      // vfts are indexed by the job's place in its whole batch (`ord`), not in the chunk.
      ...chunkArrays(
        chunk,
        Array.from({ length: Math.max(...chunk.map((p) => p.ord)) + 1 }, () => 1),
        now,
      ),
    ]
      .map(lit)
      .join(", ")}, ${lit(now.toISOString())}, '{}')`,
});
const VARIANTS: Variant[] = [
  base("base", INSERT_SQL_FOR_PROBES),
  base("plain", INSERT_PLAIN_SQL_FOR_PROBES),
  base("no-stream-trigger", INSERT_SQL_FOR_PROBES, "DROP TRIGGER jobs_stream_insert ON jobs"),
  base("no-aging-idx", INSERT_SQL_FOR_PROBES, "DROP INDEX jobs_aging_idx"),
  // The stream's arrays as before 20261203000400 (PostgreSQL's default: pglz, compression tried).
  base(
    "stream-pglz",
    INSERT_SQL_FOR_PROBES,
    [
      "ALTER TABLE job_stream ALTER COLUMN job_ids SET STORAGE EXTENDED",
      ...["job_types", "attempts", "progresses", "failures"].map((c) => `ALTER TABLE job_stream ALTER COLUMN ${c} SET COMPRESSION pglz`),
    ].join("; "),
  ),
  base("no-ledger", INSERT_SQL_FOR_PROBES.replace("FROM input i JOIN keys k ON k.job_id = i.job_id", "FROM input i")),
  base("keys-unsorted", INSERT_SQL_FOR_PROBES.replace("ORDER BY tenant_id, idempotency_key, ord\n", "\n")),
  base("keys-plain", INSERT_SQL_FOR_PROBES.replace("ON CONFLICT DO NOTHING\n", "\n")),
  base(
    "keys-not-exists",
    INSERT_SQL_FOR_PROBES.replace(
      "FROM input\n",
      "FROM input WHERE NOT EXISTS (SELECT 1 FROM idempotency_keys e WHERE (e.tenant_id, e.idempotency_key) = (input.tenant_id, input.idempotency_key))\n",
    ).replace("ON CONFLICT DO NOTHING\n", "\n"),
  ),
  base(
    "stream-in-statement",
    INSERT_SQL_FOR_PROBES.replace(
      "), flow AS (",
      `), stream AS (
       INSERT INTO job_stream (tenant_id, state, kind, job_ids, job_types, attempts, progresses, failures)
       SELECT tenant_id, 'READY', 'state', array_agg(job_id), array_agg(job_type), array_agg(0), array_agg(NULL::jsonb), array_agg(NULL::jsonb)
         FROM ins GROUP BY tenant_id
     ), flow AS (`,
    ),
    "DROP TRIGGER jobs_stream_insert ON jobs",
  ),
].filter((v) => !process.env.ONLY || process.env.ONLY.split(",").includes(v.name));

// The template data directory, and the jobs prepared against it (their policies).
const now = new Date("2026-12-02T12:00:00Z");
const batches: Prepared[][] = [];
const TEMPLATE = await migratedTemplate("enq-cg", async (seed) => {
  await seed.query(`INSERT INTO pools (id, worker_concurrency) VALUES ('bench', 10)`);
  await seed.query(`INSERT INTO queues (id, pool_id, default_max_attempts, max_attempts) VALUES ('bench', 'bench', 25, 25)`);
  await seed.query(`INSERT INTO job_types (id, queue_id) VALUES ('bench.job', 'bench')`);
  await seed.query(`INSERT INTO tenants (id) VALUES ('bench')`);
  const policyCache = new PolicyCache({ ttlMs: 600_000 });
  let k = 0;
  for (let b = 0; b < warm + measured; b++) {
    const inputs = Array.from({ length: 1000 }, () => ({ job_type: "bench.job", tenant_id: "bench", payload: { k: ++k }, idempotency_key: `k-${k}` }));
    batches.push(await prepareEnqueue(seed, inputs, { now, policyCache }));
  }
});

const script = (v: Variant, n: number): string => {
  const parts = [v.schema, v.prepare].filter(Boolean) as string[];
  for (const batch of batches.slice(0, n)) {
    parts.push("BEGIN");
    for (let i = 0; i < batch.length; i += CHUNK) parts.push(v.execute(batch.slice(i, i + CHUNK), now));
    parts.push("COMMIT");
  }
  return `${parts.join(";\n\n")};\n\n`;
};

const count = (v: Variant, n: number): number => countInstructions(v.name, TEMPLATE, "enq-cg", script(v, n)).total;

const results: Array<{ v: Variant; perJob: number }> = [];
for (const v of VARIANTS) {
  const perJob = (count(v, warm + measured) - count(v, warm)) / (measured * 1000);
  results.push({ v, perJob });
  console.log(`${v.name.padEnd(28)} ${perJob.toFixed(0)} instructions per job (×${(perJob / results[0]!.perJob).toFixed(3)} of ${results[0]!.v.name})`);
}
