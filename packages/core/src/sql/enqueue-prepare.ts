import { AppError, DEFAULT_MAX_PAYLOAD_BYTES, type TEnqueueRequest } from "@porter/contracts";
import { PolicyCache, policyKey } from "../control-plane/policy-cache";
import type { Db } from "../db";
import { clampEnvelope, type EnqueuePolicy } from "../policy/clamp";
import { jobTraceOf, type TraceStamp } from "../tracing";
import { uuidv7 } from "../uuid";

/** An enqueue request whose tenant has been resolved from the caller's credential. */
export type EnqueueInput = TEnqueueRequest & { tenant_id: string };

/** A job ready to insert: its queue and policy resolved, its envelope clamped, its times fixed. */
export type Prepared = {
  ord: number;
  jobId: string;
  input: EnqueueInput;
  queueId: string;
  poolId: string;
  payloadJson: string;
  priority: number;
  maxAttempts: number;
  timeoutS: number;
  notBefore: Date | null;
  deadlineAt: Date | null;
  runAt: Date;
  createdAt: Date;
  policy: EnqueuePolicy;
  /** The stored trace (tracing.ts `jobTraceOf`): traceparent, and trace_id (null: derived from the job id). */
  traceparent: string | null;
  traceId: string | null;
};

/**
 * The first step of an enqueue: resolves each input's queue and policy (the job-type registry),
 * refuses an oversized payload (413) or a past deadline (400) before anything is written, clamps
 * priority/attempts/timeout to the queue's and tenant's ceilings and gives each job its id (UUIDv7)
 * and run time. `ord` is the input position. Throws on the first refused input: nothing is stored.
 */
export const prepareEnqueue = async (
  db: Db,
  inputs: EnqueueInput[],
  options: { now: Date; maxPayloadBytes?: number | undefined; policyCache?: PolicyCache | undefined; stamp?: TraceStamp | null },
): Promise<Prepared[]> => {
  const now = options.now;
  const maxBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
  const policyCache = options.policyCache ?? new PolicyCache();
  const prepared: Prepared[] = [];
  const policies = await policyCache.resolve(
    db,
    inputs.map((i) => ({ jobType: i.job_type, tenantId: i.tenant_id })),
  );
  const nowMs = now.getTime();
  inputs.forEach((input, ord) => {
    const payloadJson = JSON.stringify(input.payload);
    // UTF-8 length without encoding: the JSON text is at most 3 bytes per UTF-16 unit.
    const size = payloadJson.length * 3 <= maxBytes ? payloadJson.length : Buffer.byteLength(payloadJson);
    if (size > maxBytes) {
      throw new AppError("PAYLOAD_TOO_LARGE", {
        message: `payload of ${size} bytes exceeds the limit of ${maxBytes} bytes; store the data elsewhere and pass a reference (source_ref, artifact_ref)`,
        details: { index: ord, size, limit: maxBytes },
      });
    }
    const policy = policies.get(policyKey(input.job_type, input.tenant_id))!;
    const clamped = clampEnvelope(input, policy);
    const notBefore = input.not_before ? new Date(input.not_before) : null;
    const deadlineAt = input.deadline_at ? new Date(input.deadline_at) : policy.defaultDeadlineS ? new Date(nowMs + policy.defaultDeadlineS * 1000) : null;
    if (deadlineAt && deadlineAt <= now) {
      throw new AppError("BAD_REQUEST", { message: "deadline_at is in the past", details: { index: ord } });
    }
    prepared.push({
      ord,
      jobId: uuidv7(nowMs),
      input,
      queueId: policy.queueId,
      poolId: policy.poolId,
      payloadJson,
      ...clamped,
      policy,
      notBefore,
      deadlineAt,
      runAt: notBefore && notBefore > now ? notBefore : now,
      createdAt: now,
      ...jobTraceOf(input, options.stamp ?? null),
    });
  });
  return prepared;
};
