import type { Db } from "../db";

export type ClaimTimes = { createdAt: Date; claimedAt: Date; leaseUntil: Date };

/**
 * The creation, claim and lease-end times of claimed jobs, read from their rows while they run (a
 * worker's claim does not return them: it reads none of them), by row id.
 */
export const claimTimes = async (db: Db, jobs: ReadonlyArray<{ id: string }>): Promise<Map<string, ClaimTimes>> => {
  const { rows } = await db.query<{ id: string; created_at: Date; claimed_at: Date; lease_until: Date }>(
    `SELECT id::text, created_at, claimed_at, lease_until FROM jobs WHERE id = ANY($1::bigint[]) AND state = 'RUNNING'`,
    [jobs.map((j) => j.id)],
  );
  return new Map(rows.map((r) => [r.id, { createdAt: r.created_at, claimedAt: r.claimed_at, leaseUntil: r.lease_until }]));
};

/** `claimTimes` of one job; throws when it is not running. */
export const claimTimesOf = async (db: Db, job: { id: string }): Promise<ClaimTimes> => {
  const times = (await claimTimes(db, [job])).get(job.id);
  if (!times) throw new Error(`job row ${job.id} is not running`);
  return times;
};
