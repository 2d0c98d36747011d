import { AppError } from "@porter/contracts";
import type { ControlTx } from "@porter/db/prisma";
import { writeAuditTx } from "./audit";

/** What a pause or resume writes, and who asks. */
type PauseParams = { queueIds: string[]; paused: boolean; actor: string; reason?: string };

/**
 * Sets the pause flag of queues (the control-plane state claims read: a paused queue is skipped
 * at once; running work continues) in one transaction: the rows are locked first, so `was` is the
 * flag this change replaced even under concurrent pauses. Any unknown id: 404, nothing changed.
 * Audits a `queue.pause`/`queue.resume` row per queue whose flag changes (per queue, when
 * `isAuditingUnchanged`). Returns each queue's previous flag.
 */
const writePaused = async (db: ControlTx, params: PauseParams & { isAuditingUnchanged: boolean }): Promise<Map<string, boolean>> => {
  if (params.queueIds.length === 0) return new Map();
  return db.$transaction(async (tx) => {
    // Prisma has no FOR UPDATE: the lock (in id order, so concurrent drains cannot deadlock) and
    // the database's clock for updated_at are one raw statement; the write is Prisma's.
    const locked = await tx.$queryRaw<Array<{ id: string; paused: boolean; now: Date }>>`
      SELECT id, paused, now() AS now FROM queues WHERE id = ANY(${params.queueIds}::text[]) ORDER BY id FOR UPDATE`;
    const missing = params.queueIds.filter((id) => !locked.some((q) => q.id === id));
    if (missing.length) throw new AppError("NOT_FOUND", { message: `queue(s) not found: ${missing.join(", ")}` });
    await tx.queue.updateMany({ where: { id: { in: params.queueIds } }, data: { paused: params.paused, updatedAt: locked[0]!.now } });
    const audited = locked.filter((q) => params.isAuditingUnchanged || q.paused !== params.paused);
    await writeAuditTx(
      tx,
      audited.map((q) => ({
        actor: params.actor,
        action: params.paused ? "queue.pause" : "queue.resume",
        objectType: "queue",
        objectId: q.id,
        before: { paused: q.paused },
        after: { paused: params.paused },
        reason: params.reason ?? null,
      })),
    );
    return new Map(locked.map((q) => [q.id, q.paused]));
  });
};

/**
 * Pauses or resumes a queue (claims skip paused queues at once; running work continues). Audited
 * in the same transaction (a `queue.pause`/`queue.resume` row even when the flag was already so).
 * Returns whether the flag changed. Unknown queue: 404.
 */
export const setQueuePaused = async (db: ControlTx, params: { queueId: string; paused: boolean; actor: string; reason?: string }): Promise<boolean> => {
  const { queueId, ...rest } = params;
  const was = await writePaused(db, { ...rest, queueIds: [queueId], isAuditingUnchanged: true });
  return was.get(queueId) !== params.paused;
};

/**
 * Pauses or resumes several queues in one transaction (a pool's): audited as `queue.pause` /
 * `queue.resume` for each queue whose flag changes, none for the others. Returns the queues that
 * changed, sorted. Any unknown queue: 404, nothing changed.
 */
export const setQueuesPaused = async (db: ControlTx, params: PauseParams): Promise<string[]> => {
  const was = await writePaused(db, { ...params, isAuditingUnchanged: false });
  return [...was]
    .filter(([, wasPaused]) => wasPaused !== params.paused)
    .map(([id]) => id)
    .sort();
};

/**
 * Drains queues: pauses each (claims stop at once, running jobs finish) with
 * {@link setQueuesPaused}, reason "drain" unless one is given. Returns the queues that were not
 * paused before. The console shows progress as the running count falls to zero.
 */
export const drainQueues = async (db: ControlTx, params: { queueIds: string[]; actor: string; reason?: string }): Promise<string[]> =>
  setQueuesPaused(db, { queueIds: params.queueIds, paused: true, actor: params.actor, reason: params.reason ?? "drain" });
