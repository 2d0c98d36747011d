import type { TEnqueueResult } from "@porter/contracts";
import pg from "pg";
import type { PolicyCache } from "../control-plane/policy-cache";
import type { Db } from "../db";
import { type TraceStamp, withEnqueueSpan } from "../tracing";
import { enqueueCoalesced } from "./enqueue-coalesce";
import { insertBatch, reserveVirtualTime } from "./enqueue-insert";
import { type EnqueueInput, prepareEnqueue } from "./enqueue-prepare";

export { READY_CHANNEL } from "./enqueue-insert";
export type { EnqueueInput } from "./enqueue-prepare";

export type EnqueueOptions = {
  now?: Date;
  maxPayloadBytes?: number;
  policyCache?: PolicyCache;
  /** NOTIFY waiting workers (once per pool per call). Default true. */
  notify?: boolean;
  /**
   * The W3C traceparent of the call (the producer's `traceparent` header): the parent of its
   * `porter.enqueue` span, and the trace of its jobs that name neither a traceparent nor a
   * trace_id. Default: the active OpenTelemetry context.
   */
  traceparent?: string;
};

/**
 * Enqueues jobs durably: all of them or none (one transaction; the caller's, when `db` is a
 * client inside one). The queue comes from the job-type registry, priority/attempts/timeout are
 * clamped to the queue's and tenant's ceilings. The same (tenant, idempotency_key) returns the
 * existing job with `deduplicated: true`; the same key with another job type or payload is a 409
 * and nothing is stored. Admission control applies (see `admission.ts`). Each new job gets its
 * virtual finish time for weighted fair share between tenants (docs/scheduling.md). Results are
 * in input order. Transition `enqueue` (sql/transitions.ts).
 *
 * Three steps, one file each: prepare (enqueue-prepare.ts: validate, resolve the policy → rows),
 * then either coalesce (enqueue-coalesce.ts: a single job on Porter's pool joins the other single
 * enqueues in flight) or insert (enqueue-insert.ts: the unnest array insert, with the reservation).
 * All of it inside the call's `porter.enqueue` span (tracing.ts), which stamps the jobs' traceparent.
 */
export const enqueueJobs = async (db: Db, inputs: EnqueueInput[], options: EnqueueOptions = {}): Promise<TEnqueueResult[]> => {
  if (inputs.length === 0) return [];
  const first = inputs[0]!;
  const attributes: Record<string, string> = inputs.length === 1 ? { "porter.job_type": first.job_type, "porter.tenant_id": first.tenant_id } : {};
  return withEnqueueSpan(inputs, { traceparent: options.traceparent, attributes }, (stamp) => enqueueTraced(db, inputs, stamp, options));
};

const enqueueTraced = async (db: Db, inputs: EnqueueInput[], stamp: TraceStamp | null, options: EnqueueOptions): Promise<TEnqueueResult[]> => {
  const now = options.now ?? new Date();
  const prepared = await prepareEnqueue(db, inputs, { now, maxPayloadBytes: options.maxPayloadBytes, policyCache: options.policyCache, stamp });

  // Virtual time is reserved in its own short statement when we own the transaction, so the
  // (queue, tenant) clock row is locked for microseconds, not until the enqueue commits: concurrent
  // producers of one tenant are not serialized on it (they were: one commit at a time). Tenants
  // with admission limits are serialized by admission anyway; their reservation waits until
  // admission has passed, so a refused batch moves no clock.
  const hasAdmissionLimits = prepared.some((p) => p.policy.tenantRatePerSecond !== null || p.policy.tenantBacklogCap !== null);
  const isOwnTransaction = db instanceof pg.Pool;

  // One job on our own pool: coalesced with the other single enqueues in flight on this pool into
  // shared statements (application-level group commit, see `SingleEnqueues`).
  if (isOwnTransaction && !hasAdmissionLimits && prepared.length === 1) {
    return [await enqueueCoalesced(db, prepared[0]!, options.notify !== false)];
  }
  const vfts = isOwnTransaction && !hasAdmissionLimits ? await reserveVirtualTime(db, prepared, { isOwnStatement: true }) : undefined;
  const notifyPools = options.notify === false ? [] : [...new Set(prepared.filter((p) => p.runAt <= now).map((p) => p.poolId))];

  return insertBatch(db, prepared, { now, notifyPools, vfts });
};
