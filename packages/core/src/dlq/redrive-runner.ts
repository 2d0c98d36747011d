import { randomUUID } from "node:crypto";
import { AppError } from "@porter/contracts";
import { writeAudit } from "../control-plane/audit";
import { type Db, inOwnTransaction } from "../db";
import { moveDeadJobs } from "../sql/redrive-jobs";
import {
  countSkips,
  dbNow,
  judgeRedriveJobs,
  noSkips,
  REDRIVE_SKIP_REASONS,
  type RedriveSelection,
  type RedriveSkipCounts,
  selectRedriveJobs,
} from "./redrive-plan";
import { getRedrive, type RedriveView } from "./redrive-read";

/** Default velocity, jobs per second (SQS's redrive default). */
export const DEFAULT_REDRIVE_RATE_PER_S = 50;
/** The largest batch one transaction moves, whatever the rate. */
export const MAX_REDRIVE_BATCH = 1000;

/** A batch (and the token bucket's capacity): one second's worth of jobs, at least 1, at most 1000. */
export const redriveBatchSize = (ratePerS: number): number => Math.min(MAX_REDRIVE_BATCH, Math.max(1, Math.ceil(ratePerS)));

// Creations serialize on this (transaction-scoped) lock: two redrives asked at once cannot both
// take a job as pending, since each sees the other's items only once it has committed.
const CREATE_LOCK = "porter.redrive.create";

export type CreateRedriveParams = {
  selection: RedriveSelection;
  force?: boolean;
  ratePerS?: number;
  reason?: string | null;
  actor: string;
  now?: Date;
};

/**
 * Creates a durable redrive: the selection frozen at the cutoff (now) into `redrive_items` — every
 * job of it DEAD at the cutoff, or every id asked — in job order. Jobs already redriven, dead
 * again since the cutoff, or pending in another running redrive are skipped at once (`already`);
 * the rest stay pending and are judged again, batch by batch, when they move (so a deadline that
 * passes or a backlog that fills meanwhile counts). The maintenance leader advances it
 * ({@link advanceRedrives}). Audited (`redrive.create`); a group's redrive also goes on the
 * group's thread (`dlq_events`, kind `redrive`).
 */
export const createRedrive = async (db: Db, params: CreateRedriveParams): Promise<RedriveView> => {
  const rate = params.ratePerS ?? DEFAULT_REDRIVE_RATE_PER_S;
  if (!(rate > 0 && rate <= 10_000)) throw new AppError("BAD_REQUEST", { message: "rate_per_s must be in (0, 10000]" });
  const id = randomUUID();
  await inOwnTransaction(db, async (client) => {
    await client.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [CREATE_LOCK]);
    const cutoff = params.now ?? (await dbNow(client));
    const ids = await selectRedriveJobs(client, params.selection, cutoff);
    if (ids.length === 0) throw new AppError("BAD_REQUEST", { message: "the selection holds no dead jobs: nothing to redrive" });
    const verdicts = await judgeRedriveJobs(client, ids, { cutoff, isForced: params.force ?? false, now: cutoff, redriveId: id });
    const already = verdicts.filter((v) => v.reason === "already").map((v) => v.job_id);
    const skipped = { ...noSkips(), already: already.length };
    await client.query(
      `INSERT INTO redrives (id, created_at, actor, reason, selection, cutoff, force, rate_per_s, status, total, redriven, skipped,
                             tokens, last_batch_at, finished_at)
       VALUES ($1, $2, $3, $4, $5, $2, $6, $7, $8, $9, 0, $10, $11, $2, $12)`,
      [
        id,
        cutoff,
        params.actor,
        params.reason ?? null,
        JSON.stringify(params.selection),
        params.force ?? false,
        rate,
        already.length === ids.length ? "completed" : "running",
        ids.length,
        JSON.stringify(skipped),
        // The bucket starts full: the first batch goes at once.
        redriveBatchSize(rate),
        already.length === ids.length ? cutoff : null,
      ],
    );
    const isAlready = new Set(already);
    await client.query(
      `INSERT INTO redrive_items (redrive_id, job_id, state, reason, done_at)
       SELECT $1, j.id, CASE WHEN j.skip THEN 'skipped' ELSE 'pending' END, CASE WHEN j.skip THEN 'already' END,
              CASE WHEN j.skip THEN $4::timestamptz END
         FROM unnest($2::uuid[], $3::boolean[]) AS j(id, skip)`,
      [id, ids, ids.map((j) => isAlready.has(j)), cutoff],
    );
    const summary = { total: ids.length, already: already.length, force: params.force ?? false, rate_per_s: rate, cutoff: cutoff.toISOString() };
    await writeAudit(client, [
      {
        actor: params.actor,
        action: "redrive.create",
        objectType: "redrive",
        objectId: id,
        after: { selection: params.selection, ...summary },
        reason: params.reason ?? null,
      },
    ]);
    if ("group_id" in params.selection) {
      await client.query(`INSERT INTO dlq_events (group_id, at, actor, kind, body, data) VALUES ($1::bigint, $2, $3, 'redrive', $4, $5)`, [
        params.selection.group_id,
        cutoff,
        params.actor,
        params.reason ?? null,
        JSON.stringify({ redrive_id: id, ...summary }),
      ]);
    }
  });
  return (await getRedrive(db, id))!;
};

/** What one batch of one redrive did. */
export type RedriveBatch = { redrive_id: string; redriven: number; skipped: number; status: "running" | "completed" };

type LockedRedrive = {
  id: string;
  actor: string;
  reason: string | null;
  cutoff: Date;
  force: boolean;
  rate_per_s: number;
  tokens: number;
  last_batch_at: Date | null;
  skipped: RedriveSkipCounts;
  now: Date;
};

/**
 * Runs one batch of one running redrive, in one transaction, if its row is free (a batch in
 * flight elsewhere, or an abort, holds it: SKIP LOCKED) and its velocity allows: a token bucket
 * of capacity one batch, refilled at `rate_per_s` since the last batch. It takes floor(tokens)
 * pending items in job order, locks their finished rows, judges them again by the shared rule,
 * moves the eligible ones DEAD → READY (the shared move, transition `redrive_run`), marks every
 * item redriven or skipped (reason) with done_at, and updates the counters and the bucket (only
 * moved jobs spend tokens). The redrive completes when no item is pending. The moves, the items
 * and the counters commit together: a crash before the commit changes nothing, after it the
 * items are done — a job is never redriven twice. Returns null when nothing ran.
 */
export const advanceRedrive = async (db: Db, params: { id: string; now?: Date }): Promise<RedriveBatch | null> =>
  inOwnTransaction(db, async (client) => {
    const { rows } = await client.query<LockedRedrive>(
      `SELECT id::text, actor, reason, cutoff, force, rate_per_s, tokens, last_batch_at, skipped,
              coalesce($2::timestamptz, clock_timestamp()) AS now
         FROM redrives WHERE id = $1 AND status = 'running'
          FOR UPDATE SKIP LOCKED`,
      [params.id, params.now ?? null],
    );
    const r = rows[0];
    if (!r) return null;
    const batch = redriveBatchSize(r.rate_per_s);
    const elapsedS = r.last_batch_at ? Math.max(0, (r.now.getTime() - r.last_batch_at.getTime()) / 1000) : 0;
    const tokens = Math.min(batch, r.tokens + r.rate_per_s * elapsedS);
    const take = Math.floor(tokens);
    if (take < 1) return { redrive_id: r.id, redriven: 0, skipped: 0, status: "running" };
    const { rows: items } = await client.query<{ job_id: string }>(
      `SELECT job_id::text FROM redrive_items WHERE redrive_id = $1 AND state = 'pending' ORDER BY job_id LIMIT $2`,
      [r.id, take],
    );
    const pending = items.map((p) => p.job_id);

    // The finished rows, locked in job order (as every writer of them locks): nothing else moves
    // or prunes them before this batch commits.
    await client.query(`SELECT 1 FROM finished_jobs WHERE job_id = ANY($1::uuid[]) ORDER BY job_id FOR UPDATE`, [pending]);
    const verdicts = await judgeRedriveJobs(client, pending, { cutoff: r.cutoff, isForced: r.force, now: r.now, redriveId: r.id });
    const eligible = verdicts.filter((v) => v.reason === null).map((v) => v.job_id);
    const moved = await moveDeadJobs(client, { jobIds: eligible, now: r.now, actor: r.actor, reason: r.reason, isForced: r.force, redriveId: r.id });
    const isMoved = new Set(moved.map((m) => m.job_id));
    // An eligible job the guarded move did not take changed meanwhile: `already`.
    const outcome = verdicts.map((v) => ({ job_id: v.job_id, reason: isMoved.has(v.job_id) ? null : (v.reason ?? "already") }));
    await client.query(
      `UPDATE redrive_items i SET state = CASE WHEN o.reason IS NULL THEN 'redriven' ELSE 'skipped' END, reason = o.reason, done_at = $4
         FROM unnest($2::uuid[], $3::text[]) AS o(job_id, reason)
        WHERE i.redrive_id = $1 AND i.job_id = o.job_id AND i.state = 'pending'`,
      [r.id, outcome.map((o) => o.job_id), outcome.map((o) => o.reason), r.now],
    );
    const skippedNow = countSkips(outcome);
    const skipped = { ...noSkips(), ...r.skipped };
    for (const k of REDRIVE_SKIP_REASONS) skipped[k] += skippedNow[k];
    const { rows: done } = await client.query<{ status: "running" | "completed" }>(
      `UPDATE redrives
          SET redriven = redriven + $2, skipped = $3, tokens = $4, last_batch_at = $5::timestamptz,
              status = CASE WHEN EXISTS (SELECT 1 FROM redrive_items WHERE redrive_id = $1 AND state = 'pending') THEN 'running' ELSE 'completed' END,
              finished_at = CASE WHEN EXISTS (SELECT 1 FROM redrive_items WHERE redrive_id = $1 AND state = 'pending') THEN NULL ELSE $5::timestamptz END
        WHERE id = $1
        RETURNING status`,
      [r.id, moved.length, JSON.stringify(skipped), tokens - moved.length, r.now],
    );
    return { redrive_id: r.id, redriven: moved.length, skipped: outcome.length - moved.length, status: done[0]!.status };
  });

/**
 * Advances every running redrive by one batch (oldest first), each in its own transaction. Called
 * by the maintenance leader every tick (apps/worker/src/runtime/maintenance-leader.ts); safe to
 * run from several processes at once (row locks, SKIP LOCKED). A batch that fails rolls back
 * alone and is reported in `failed` (retried next tick); the other redrives still advance.
 * Transition `redrive_run`.
 */
export const advanceRedrives = async (
  db: Db,
  params: { now?: Date } = {},
): Promise<{ batches: RedriveBatch[]; failed: Array<{ redrive_id: string; error: unknown }> }> => {
  const { rows } = await db.query<{ id: string }>(`SELECT id::text FROM redrives WHERE status = 'running' ORDER BY created_at, id LIMIT 100`);
  const batches: RedriveBatch[] = [];
  const failed: Array<{ redrive_id: string; error: unknown }> = [];
  for (const { id } of rows) {
    try {
      const batch = await advanceRedrive(db, { id, ...(params.now ? { now: params.now } : {}) });
      if (batch && (batch.redriven > 0 || batch.skipped > 0 || batch.status === "completed")) batches.push(batch);
    } catch (error) {
      failed.push({ redrive_id: id, error });
    }
  }
  return { batches, failed };
};

/**
 * Aborts a running redrive: status aborted, by whom, when. Waits for the row lock of a batch in
 * flight, so it stops within one batch; pending items stay pending (not redriven). Audited
 * (`redrive.abort`). 404 when there is no such redrive, 409 when it already finished.
 */
export const abortRedrive = async (db: Db, params: { id: string; actor: string; reason?: string | null; now?: Date }): Promise<RedriveView> => {
  await inOwnTransaction(db, async (client) => {
    const { rows } = await client.query<{ status: string }>(`SELECT status FROM redrives WHERE id = $1 FOR UPDATE`, [params.id]);
    if (!rows[0]) throw new AppError("NOT_FOUND", { message: `no redrive ${params.id}` });
    if (rows[0].status !== "running")
      throw new AppError("CONFLICT", { message: `redrive ${params.id} is ${rows[0].status}: only a running redrive can be aborted` });
    await client.query(
      `UPDATE redrives SET status = 'aborted', aborted_by = $2, finished_at = coalesce($3::timestamptz, clock_timestamp()) WHERE id = $1 AND status = 'running'`,
      [params.id, params.actor, params.now ?? null],
    );
    await writeAudit(client, [
      {
        actor: params.actor,
        action: "redrive.abort",
        objectType: "redrive",
        objectId: params.id,
        before: { status: "running" },
        after: { status: "aborted" },
        reason: params.reason ?? null,
      },
    ]);
  });
  return (await getRedrive(db, params.id))!;
};
