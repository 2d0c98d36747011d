import { createApiKey } from "@porter/core";
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
 * API keys, written with SQL and core's createApiKey — enough for producer API tests.
 */
export const seedProducerFixtures = async (pool: pg.Pool): Promise<ProducerFixtures> => {
  await pool.query(`
    INSERT INTO pools (id) VALUES ('fx-pool');
    INSERT INTO queues (id, pool_id, max_priority, max_attempts) VALUES ('fx-queue', 'fx-pool', 90, 10);
    INSERT INTO job_types (id, queue_id) VALUES ('fx.email', 'fx-queue'), ('fx.parse', 'fx-queue'), ('fx.other', 'fx-queue');
    INSERT INTO tenants (id, name) VALUES ('fx_tenant_a', 'Tenant A'), ('fx_tenant_b', 'Tenant B');
  `);
  const actor = "test:fixtures";
  const keyA = await createApiKey(pool, { tenantIds: ["fx_tenant_a"], jobTypes: ["*"], actor });
  const keyB = await createApiKey(pool, { tenantIds: ["fx_tenant_b"], jobTypes: ["*"], actor });
  const keyAB = await createApiKey(pool, { tenantIds: ["fx_tenant_a", "fx_tenant_b"], jobTypes: ["*"], actor });
  const keyEmailOnly = await createApiKey(pool, { tenantIds: ["fx_tenant_a"], jobTypes: ["fx.email"], actor });
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
