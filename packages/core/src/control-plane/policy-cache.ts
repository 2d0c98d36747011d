import { AppError } from "@porter/contracts";
import pg from "pg";
import type { Db } from "../db";
import type { EnqueuePolicy } from "../policy/clamp";

type JobTypeRow = {
  id: string;
  queue_id: string;
  pool_id: string;
  timeout_s: number | null;
  default_priority: number;
  max_priority: number;
  default_max_attempts: number;
  max_attempts: number;
  default_timeout_s: number;
  max_timeout_s: number;
  default_deadline_s: number | null;
  admission: "reject" | "defer";
};
type TenantRow = {
  id: string;
  max_priority: number | null;
  max_attempts: number | null;
  rate_per_second: number | null;
  backlog_cap: number | null;
};

/**
 * The enqueue policy cache: each job type's queue, pool and bounds and each tenant's ceilings, read
 * for each enqueue. With `ttlMs` > 0 the rows are cached that long per process (knobs changed in
 * the console take effect within the TTL); the claim path never uses this cache.
 */
export class PolicyCache {
  private jobTypes = new Map<string, { row: JobTypeRow; at: number }>();
  private tenants = new Map<string, { row: TenantRow; at: number }>();
  /** Reads in flight on a pool, by `j:<job type>` / `t:<tenant>`: concurrent misses share them. */
  private loading = new Map<string, Promise<void>>();

  constructor(private readonly options: { ttlMs: number } = { ttlMs: 0 }) {}

  /** Policies for each (job type, tenant) pair; unknown types or tenants are a 400. */
  async resolve(db: Db, pairs: Array<{ jobType: string; tenantId: string }>): Promise<Map<string, EnqueuePolicy>> {
    const now = Date.now();
    const fresh = <T>(entry: { row: T; at: number } | undefined) => (entry && now - entry.at < this.options.ttlMs ? entry.row : undefined);
    const typeIds = [...new Set(pairs.map((p) => p.jobType))];
    const tenantIds = [...new Set(pairs.map((p) => p.tenantId))];
    const missingTypes = typeIds.filter((id) => !fresh(this.jobTypes.get(id)));
    const missingTenants = tenantIds.filter((id) => !fresh(this.tenants.get(id)));
    if (missingTypes.length === 0 && missingTenants.length === 0) return this.policiesOf(pairs);
    // On a pool, concurrent callers missing the same rows share one read of them: when the TTL
    // runs out under load, one query per row instead of one per call in flight. A client may be
    // inside a transaction (its reads may see its own uncommitted rows): it reads for itself.
    const isShared = db instanceof pg.Pool;
    const waits: Promise<void>[] = [];
    const own = (ids: string[], prefix: "t" | "j") =>
      ids.filter((id) => {
        const inFlight = isShared ? this.loading.get(`${prefix}:${id}`) : undefined;
        if (inFlight) waits.push(inFlight);
        return !inFlight;
      });
    const loadTypes = own(missingTypes, "j");
    const loadTenants = own(missingTenants, "t");
    if (loadTypes.length > 0 || loadTenants.length > 0) {
      const load = this.load(db, loadTypes, loadTenants, now);
      if (isShared) {
        const keys = [...loadTypes.map((id) => `j:${id}`), ...loadTenants.map((id) => `t:${id}`)];
        const settled = load.finally(() => {
          for (const key of keys) if (this.loading.get(key) === settled) this.loading.delete(key);
        });
        for (const key of keys) this.loading.set(key, settled);
        waits.push(settled);
      } else waits.push(load);
    }
    await Promise.all(waits);
    return this.policiesOf(pairs);
  }

  /** Reads these job types' and tenants' rows into the cache, stamped `now`. */
  private async load(db: Db, types: string[], tenants: string[], now: number): Promise<void> {
    if (types.length > 0) {
      const { rows } = await db.query<JobTypeRow>(
        `SELECT jt.id, jt.queue_id, q.pool_id, jt.timeout_s, q.default_priority, q.max_priority,
                q.default_max_attempts, q.max_attempts, q.default_timeout_s, q.max_timeout_s, q.default_deadline_s,
                q.admission
           FROM job_types jt JOIN queues q ON q.id = jt.queue_id
          WHERE jt.id = ANY($1::text[])`,
        [types],
      );
      for (const row of rows) this.jobTypes.set(row.id, { row, at: now });
    }
    if (tenants.length > 0) {
      const { rows } = await db.query<TenantRow>(
        `SELECT id, max_priority, max_attempts, rate_per_second, backlog_cap FROM tenants WHERE id = ANY($1::text[])`,
        [tenants],
      );
      for (const row of rows) this.tenants.set(row.id, { row, at: now });
    }
  }

  /** The policy of each pair from the cached rows; unknown types or tenants are a 400. */
  private policiesOf(pairs: Array<{ jobType: string; tenantId: string }>): Map<string, EnqueuePolicy> {
    const policies = new Map<string, EnqueuePolicy>();
    for (const { jobType, tenantId } of pairs) {
      const type = this.jobTypes.get(jobType)?.row;
      if (!type) throw new AppError("BAD_REQUEST", { message: `unknown job_type "${jobType}"`, details: { job_type: jobType } });
      const tenant = this.tenants.get(tenantId)?.row;
      if (!tenant) throw new AppError("BAD_REQUEST", { message: `unknown tenant "${tenantId}"`, details: { tenant_id: tenantId } });
      policies.set(policyKey(jobType, tenantId), {
        queueId: type.queue_id,
        poolId: type.pool_id,
        defaultPriority: type.default_priority,
        maxPriority: type.max_priority,
        defaultMaxAttempts: type.default_max_attempts,
        maxAttempts: type.max_attempts,
        defaultTimeoutS: type.timeout_s ?? type.default_timeout_s,
        maxTimeoutS: type.max_timeout_s,
        defaultDeadlineS: type.default_deadline_s,
        tenantMaxPriority: tenant.max_priority,
        tenantMaxAttempts: tenant.max_attempts,
        admission: type.admission,
        tenantRatePerSecond: tenant.rate_per_second,
        tenantBacklogCap: tenant.backlog_cap,
      });
    }
    return policies;
  }
}

export const policyKey = (jobType: string, tenantId: string) => `${jobType}\u0000${tenantId}`;
