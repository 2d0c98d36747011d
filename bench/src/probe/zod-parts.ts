// Probe (not part of the suite): what each part of the enqueue request's schema costs per job.
//   npx tsx bench/src/probe/zod-parts.ts
import { ZEnqueueRequest, ZPayload, ZStorableText } from "@porter/contracts";
import { z } from "zod";

const ZIdentifier = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/);
const key = ZStorableText.min(1).max(200);
const jobs = Array.from({ length: 1000 }, (_, i) => ({ job_type: "bench.job", payload: { k: i }, idempotency_key: `k-${i}` }));
const time = (name: string, fn: (j: (typeof jobs)[number]) => unknown) => {
  for (let r = 0; r < 100; r++) for (const j of jobs) fn(j);
  const t0 = performance.now();
  const rounds = 300;
  for (let r = 0; r < rounds; r++) for (const j of jobs) fn(j);
  console.log(`${name.padEnd(34)} ${(((performance.now() - t0) / rounds / 1000) * 1e6).toFixed(0).padStart(6)} ns/job`);
};
time("whole request", (j) => ZEnqueueRequest.parse(j));
time("identifier (job_type)", (j) => ZIdentifier.parse(j.job_type));
time("storable key (idempotency_key)", (j) => key.parse(j.idempotency_key));
time("payload (record + payloadIssue)", (j) => ZPayload.parse(j.payload));
time("z.record(z.string(), z.unknown())", (j) => z.record(z.string(), z.unknown()).parse(j.payload));
const rec = z.record(z.string(), z.unknown());
time("record, schema kept", (j) => rec.parse(j.payload));
const obj = z.strictObject({ job_type: z.string(), payload: z.unknown(), idempotency_key: z.string(), tenant_id: z.string().optional() });
time("strictObject of 4 plain fields", (j) => obj.parse(j));
