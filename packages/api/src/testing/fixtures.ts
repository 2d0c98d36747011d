import { apiKey, controlPlane } from "@porter/core/testing/control-plane-factory";
import type { ControlDb } from "@porter/db/prisma";
import type pg from "pg";

/** Keys and ids of {@link seedProducerFixtures}. */
export type ProducerFixtures = {
  tenantA: string;
  tenantB: string;
  /** tenant A, every job type. */
  keyA: string;
  /** tenant B, every job type. */
  keyB: string;
  /** tenants A and B, every job type (tenant_id must be given). */
  keyAB: string;
  /** tenant A, only `fx.email`. */
  keyEmailOnly: string;
  keyEmailOnlyId: string;
};

/**
 * A pool, a queue, three job types (`fx.email`, `fx.parse`, `fx.other`), two tenants and four
 * API keys, from core's control-plane factory — enough for producer API tests. Takes a test
 * database (its owner pool for the rows, its Prisma client for the keys).
 */
export const seedProducerFixtures = async ({ pool, prisma }: { pool: pg.Pool; prisma: ControlDb }): Promise<ProducerFixtures> => {
  await controlPlane(pool, {
    pool: "fx-pool",
    queues: [{ id: "fx-queue", max_priority: 90, max_attempts: 10 }],
    jobTypes: ["fx.email", "fx.parse", "fx.other"].map((id) => ({ id, queue: "fx-queue" })),
    tenants: [
      { id: "fx_tenant_a", name: "Tenant A" },
      { id: "fx_tenant_b", name: "Tenant B" },
    ],
  });
  const keyA = await apiKey(prisma, { tenant_ids: ["fx_tenant_a"], job_types: ["*"] });
  const keyB = await apiKey(prisma, { tenant_ids: ["fx_tenant_b"], job_types: ["*"] });
  const keyAB = await apiKey(prisma, { tenant_ids: ["fx_tenant_a", "fx_tenant_b"], job_types: ["*"] });
  const keyEmailOnly = await apiKey(prisma, { tenant_ids: ["fx_tenant_a"], job_types: ["fx.email"] });
  return {
    tenantA: "fx_tenant_a",
    tenantB: "fx_tenant_b",
    keyA: keyA.key,
    keyB: keyB.key,
    keyAB: keyAB.key,
    keyEmailOnly: keyEmailOnly.key,
    keyEmailOnlyId: keyEmailOnly.id,
  };
};

/** Jobs stored anywhere (live, finished) and idempotency keys: "nothing stored" checks. */
export const countStored = async (pool: pg.Pool): Promise<{ jobs: number; keys: number }> => {
  const { rows } = await pool.query<{ jobs: string; keys: string }>(
    `SELECT (SELECT count(*) FROM jobs) + (SELECT count(*) FROM finished_jobs) AS jobs,
            (SELECT count(*) FROM idempotency_keys) AS keys`,
  );
  return { jobs: Number(rows[0]!.jobs), keys: Number(rows[0]!.keys) };
};
