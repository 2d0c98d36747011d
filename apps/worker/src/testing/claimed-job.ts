import type { ClaimedJob } from "@porter/core";

/** A claimed job as a worker receives it, for unit tests of attempts and failures (no database). */
export const claimedJob = (over: Partial<ClaimedJob> = {}): ClaimedJob => ({
  id: "7",
  jobId: "00000000-0000-4000-8000-000000000007",
  jobType: "diag.fail",
  queueId: "diag",
  tenantId: "tenant_A",
  payload: {},
  priority: 50,
  idempotencyKey: "k",
  attempt: 1,
  maxAttempts: 3,
  timeoutS: 30,
  deadlineAt: null,
  traceId: "trace-1",
  leaseToken: "42",
  leaseSeconds: 30,
  backoffBaseMs: 1000,
  backoffCapMs: 60_000,
  cancelRequested: false,
  resourceKeyId: null,
  isStarted: true,
  lastCheckpoint: null,
  traceparent: null,
  ...over,
});
