// Probe (not part of the suite): what validating producer.enqueueBatch's input (1000 jobs) and
// output costs — zod's async parse (what tRPC calls on a zod schema: parseAsync) against its
// synchronous one (JIT-compiled object parsers), interleaved; then zod's AOT `z.compile` of both.
//   npx tsx bench/src/probe/zod-cost.ts [jobs per call] [rounds]
import { ZEnqueueBatchRequest, ZEnqueueResult } from "@porter/contracts";
import { z } from "zod";

const [n, rounds] = [Number(process.argv[2] ?? 1000), Number(process.argv[3] ?? 5)];
const jobs = Array.from({ length: n }, (_, k) => ({ job_type: "bench.job", payload: { k }, idempotency_key: `k-${k}` }));
const body = JSON.stringify({ jobs });
const parsed = JSON.parse(body);
const results = { results: Array.from({ length: n }, () => ({ job_id: crypto.randomUUID(), status: "READY", deduplicated: false })) };
const out = z.object({ results: z.array(ZEnqueueResult) });
const variants: Record<string, () => unknown> = {
  "JSON.parse of the body": () => JSON.parse(body),
  "input: parseAsync (tRPC's)": () => ZEnqueueBatchRequest.parseAsync(parsed),
  "input: parse (sync)": async () => ZEnqueueBatchRequest.parse(parsed),
  "output: parseAsync (tRPC's)": () => out.parseAsync(results),
  "output: parse (sync)": async () => out.parse(results),
  "JSON.stringify of the results": () => JSON.stringify(results),
};
const times: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
const reps = Math.max(20, Math.round(100_000 / n));
for (let round = 0; round < rounds; round++) {
  for (const [name, fn] of Object.entries(variants)) {
    for (let i = 0; i < 5; i++) await fn();
    const t0 = performance.now();
    for (let i = 0; i < reps; i++) await fn();
    times[name]!.push((performance.now() - t0) / reps);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const [name, xs] of Object.entries(times)) console.log(`${name.padEnd(30)} ${median(xs).toFixed(3)} ms per call of ${n}`);
const compiled = z.compile(ZEnqueueBatchRequest);
try {
  z.compile(ZEnqueueBatchRequest, { strict: true });
  console.log("compiles strictly");
} catch (e) {
  console.log(`strict compile refused: ${(e as Error).message}`);
}
const compiledOut = z.compile(out);
const more: Record<string, () => unknown> = {
  "input: parse (sync)": () => ZEnqueueBatchRequest.parse(parsed),
  "input: compiled, parse": () => compiled.parse(parsed),
  "output: parse (sync)": () => out.parse(results),
  "output: compiled, parse": () => compiledOut.parse(results),
};
const t2: Record<string, number[]> = Object.fromEntries(Object.keys(more).map((k) => [k, []]));
for (let round = 0; round < rounds; round++) {
  for (const [name, fn] of Object.entries(more)) {
    for (let i = 0; i < 5; i++) fn();
    const t0 = performance.now();
    for (let i = 0; i < reps; i++) fn();
    t2[name]!.push((performance.now() - t0) / reps);
  }
}
for (const [name, xs] of Object.entries(t2)) console.log(`${name.padEnd(30)} ${median(xs).toFixed(3)} ms per call of ${n}`);
