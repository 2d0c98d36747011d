// Dead jobs the way workers make them (enqueued, claimed, failed for good), for the redrive tests;
// then, as fixtures do, the finished rows are set directly where a test needs a property (a passed
// deadline, recorded effects). Integration tests only.
import type { TJobError } from "@porter/contracts";
import type { Db } from "../db";
import { claimJobs } from "../sql/claim-jobs";
import { enqueueJobs } from "../sql/enqueue-jobs";
import { failJobs } from "../sql/fail-jobs";

let n = 0;

export type DeadJobSpec = {
  jobType: string;
  tenantId?: string;
  code?: string;
  errorClass?: TJobError["class"];
  message?: string;
  /** After it died: a deadline in the past. */
  isExpired?: boolean;
  /** After it died: recorded effects (partially completed). */
  isPartial?: boolean;
};

/**
 * Kills `count` jobs of the spec (at most 1000 per call): enqueued, claimed by `poolId` (the pool
 * must have nothing else claimable), failed DEAD with the spec's error. Returns their ids, in job order.
 */
export const killJobs = async (db: Db, count: number, spec: DeadJobSpec, poolId = "p1"): Promise<string[]> => {
  const enqueued = await enqueueJobs(
    db,
    Array.from({ length: count }, () => ({
      job_type: spec.jobType,
      tenant_id: spec.tenantId ?? "tenant_A",
      payload: { n: ++n },
      idempotency_key: `dead-${process.pid}-${n}-${Math.random()}`,
      max_attempts: 1,
    })),
  );
  const ids = new Set(enqueued.map((e) => e.job_id));
  const claimed = await claimJobs(db, { poolId, workerId: "test-killer", limit: count });
  if (claimed.length !== count || claimed.some((c) => !ids.has(c.jobId)))
    throw new Error(`killJobs: claimed ${claimed.length} of ${count} (other work in the pool?)`);
  await failJobs(
    db,
    claimed.map((c) => ({
      id: c.id,
      leaseToken: c.leaseToken,
      attempt: c.attempt,
      outcome: "failed" as const,
      error: {
        code: spec.code ?? "BOOM",
        class: spec.errorClass ?? "retryable",
        message: spec.message ?? "upstream said no",
        worker_version: "test",
        attempt: c.attempt,
        trace_id: c.traceId,
        last_checkpoint: null,
      },
      next: { state: "DEAD" as const },
    })),
  );
  const list = [...ids].sort();
  if (spec.isExpired) await db.query(`UPDATE finished_jobs SET deadline_at = now() - interval '1 minute' WHERE job_id = ANY($1::uuid[])`, [list]);
  if (spec.isPartial) await db.query(`UPDATE finished_jobs SET partial = true WHERE job_id = ANY($1::uuid[])`, [list]);
  return list;
};

/** Row counts of every table a redrive could touch: a dry run must leave them all as they were. */
export const redriveTableCounts = async (db: Db): Promise<Record<string, number>> => {
  const tables = [
    "jobs",
    "finished_jobs",
    "job_events",
    "audit_log",
    "redrives",
    "redrive_items",
    "dlq_events",
    "dlq_groups",
    "fair_clocks",
    "idempotency_keys",
  ];
  const { rows } = await db.query<Record<string, string>>(`SELECT ${tables.map((t) => `(SELECT count(*) FROM ${t}) AS ${t}`).join(", ")}`);
  return Object.fromEntries(tables.map((t) => [t, Number(rows[0]![t])]));
};
