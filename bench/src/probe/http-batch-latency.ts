// Probe (not part of the suite): per-call latency of sequential 1000-job batches, direct against
// the producer API over HTTP, on the bench's own Porter session (openPorter + startPorterHttp).
//   npx tsx bench/src/probe/http-batch-latency.ts [calls] [size]
import { openPorter } from "../systems/porter";
import { VARIANTS } from "../variants";

const [calls, size] = [Number(process.argv[2] ?? 40), Number(process.argv[3] ?? 1000)];
const adminUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const variant = VARIANTS.find((v) => v.id === "porter")!;
const session = await openPorter(adminUrl, variant, { concurrency: 24, connections: 26 });
const http = await session.http!();
let k = 1;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const lat: Record<string, number[]> = { direct: [], http: [] };
for (let round = 0; round < 3; round++) {
  for (const [name, call] of [
    ["direct", session.enqueueBatch],
    ["http", http.enqueueBatch],
  ] as const) {
    await session.reset?.();
    const xs: number[] = [];
    for (let i = 0; i < calls; i++) {
      const batch = Array.from({ length: size }, () => ({ k: k++ }));
      const t0 = performance.now();
      await call(batch);
      xs.push(performance.now() - t0);
    }
    lat[name]!.push(median(xs));
    console.log(
      `round ${round} ${name}: median ${median(xs).toFixed(2)} ms/call, p90 ${[...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)]!.toFixed(2)}`,
    );
  }
}
await http.close();
await session.close();
