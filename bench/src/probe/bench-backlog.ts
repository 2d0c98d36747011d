// The probes' backlog: `jobs` no-op jobs of type bench.job for tenant bench (or round-robin over
// `tenants`), enqueued by core in batches of 1000 (what producers run), then VACUUM ANALYZE so
// every run starts from the same plan.
import { enqueueJobs } from "@porter/core";
import type pg from "pg";

export const enqueueBenchBacklog = async (db: pg.Pool, jobs: number, tenants: readonly string[] = ["bench"]): Promise<void> => {
  for (let i = 0; i < jobs; i += 1000) {
    const batch = Array.from({ length: Math.min(1000, jobs - i) }, (_, k) => ({
      job_type: "bench.job",
      tenant_id: tenants[(i + k) % tenants.length]!,
      payload: { k: i + k },
      idempotency_key: `k-${i + k}`,
    }));
    await enqueueJobs(db, batch);
  }
  await db.query(`VACUUM ANALYZE jobs`);
};
