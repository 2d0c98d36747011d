// Probe (not part of the suite): what validating a 1000-job enqueueBatch body costs the server, by
// part — JSON.parse, the contract's input schema, the output schema — as the bench's HTTP row sends it.
//   npx tsx bench/src/probe/zod-batch.ts [rounds]
import { ZEnqueueBatchRequest, ZEnqueueRequest, ZEnqueueResult, ZPayload } from "@porter/contracts";
import { z } from "zod";

const rounds = Number(process.argv[2] ?? 400);
const jobs = Array.from({ length: 1000 }, (_, i) => ({ job_type: "bench.job", payload: { k: i }, idempotency_key: `k-${i}` }));
const body = JSON.stringify({ jobs });
const output = { results: jobs.map(() => ({ job_id: crypto.randomUUID(), status: "READY", deduplicated: false })) };
const ZOutput = z.object({ results: z.array(ZEnqueueResult) });
const parts: Record<string, () => unknown> = {
  "JSON.parse": () => JSON.parse(body),
  "input schema": () => ZEnqueueBatchRequest.parse(JSON.parse(body)),
  "payload only ×1000": () => {
    const parsed = JSON.parse(body) as typeof output & { jobs: Array<{ payload: unknown }> };
    for (const j of parsed.jobs) ZPayload.parse(j.payload);
  },
  "request w/o batch ×1000": () => {
    const parsed = JSON.parse(body) as { jobs: unknown[] };
    for (const j of parsed.jobs) ZEnqueueRequest.parse(j);
  },
  "output schema": () => ZOutput.parse(output),
  "JSON.stringify output": () => JSON.stringify({ result: { data: output } }),
};
for (let pass = 0; pass < 2; pass++) {
  for (const [name, fn] of Object.entries(parts)) {
    for (let i = 0; i < 50; i++) fn();
    const t0 = performance.now();
    for (let i = 0; i < rounds; i++) fn();
    const ms = (performance.now() - t0) / rounds;
    if (pass === 1) console.log(`${name.padEnd(26)} ${ms.toFixed(3)} ms per 1000-job call`);
  }
}
