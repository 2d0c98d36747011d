// Probe (not part of the suite): PorterWorker burn-down against porter_perf, preloaded by /tmp/reset-perf.sh.
import { createPool } from "@porter/db";
import { defineHandler } from "@porter/sdk";
import { createHandlerMap } from "@porter/worker/handlers/handler-map";
import { createLogger } from "@porter/worker/logger";
import { PorterWorker } from "@porter/worker/runtime/worker";

const url = "postgres://postgres@127.0.0.1:5432/porter_perf";
const [concurrency, prefetch, flushBatch] = [Number(process.argv[2] ?? 24), Number(process.argv[3] ?? 24), Number(process.argv[4] ?? 100)];
const pool = createPool(url, { max: 10 });
const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs`);
const total = rows[0]!.n;
const t0 = performance.now();
const worker = await PorterWorker.start({
  db: pool,
  connectionString: url,
  poolId: "bench",
  concurrency,
  prefetch,
  flushBatch,
  logger: createLogger({ level: "warn" }),
  handlers: createHandlerMap([defineHandler({ type: "bench.noop", run: async () => null })]),
  maintenance: false,
});
for (;;) {
  const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs`);
  if (rows[0]!.n === 0) break;
  await new Promise((r) => setTimeout(r, 50));
}
const s = (performance.now() - t0) / 1000;
console.log(`c=${concurrency} prefetch=${prefetch} flushBatch=${flushBatch}: ${total} jobs in ${s.toFixed(2)} s = ${(total / s).toFixed(0)} jobs/s`);
await worker.drain({ graceMs: 100 });
await pool.end();
