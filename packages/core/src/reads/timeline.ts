import type { TTimelineEvent } from "@porter/contracts";

export type AttemptRow = {
  attempt: number;
  worker_id: string | null;
  started_at: Date;
  finished_at: Date;
  heartbeat_at: Date | null;
  outcome: "succeeded" | "failed" | "timed_out" | "lease_expired" | "cancelled" | "handed_back" | "not_started";
  error: Record<string, unknown> | null;
  retry_at: Date | null;
};
export type EventRow = { at: Date; kind: string; attempt: number | null; actor: string | null; data: Record<string, unknown> | null };

const OUTCOME_KIND: Record<AttemptRow["outcome"], string> = {
  succeeded: "succeeded",
  failed: "attempt_failed",
  timed_out: "attempt_timed_out",
  lease_expired: "lease_expired",
  cancelled: "attempt_cancelled",
  handed_back: "handed_back",
  not_started: "not_started",
};

/**
 * The job's timeline, in time order: enqueued (the job's creation), then per attempt claimed → its
 * outcome (succeeded, failed with cause, timed out, lease expired — flagged as a possible duplicate
 * execution —, handed back) and the retry it scheduled, the running attempt's claim and last
 * heartbeat, and the recorded events (cancel requested, cancelled, dead, expired, redriven, …).
 * Attempts are stored once per attempt rather than as separate events to keep the hot path lean.
 */
export const buildTimeline = (input: {
  createdAt: Date;
  attempts: AttemptRow[];
  events: EventRow[];
  running: { attempt: number; claimedAt: Date; workerId: string | null; heartbeatAt: Date | null; leaseUntil: Date | null } | null;
  /** The successful attempt, read from the finished row (it has no `job_attempts` row). */
  succeeded: { attempt: number; claimedAt: Date; workerId: string | null; finishedAt: Date } | null;
}): TTimelineEvent[] => {
  const out: Array<TTimelineEvent & { order: number }> = [];
  let order = 0;
  const push = (at: Date, kind: string, attempt: number | null, actor: string | null, data: Record<string, unknown> | null) =>
    out.push({ at: at.toISOString(), kind, attempt, actor, data, order: order++ });

  push(input.createdAt, "enqueued", null, null, null);
  for (const a of input.attempts) {
    push(a.started_at, "claimed", a.attempt, a.worker_id, null);
    const data: Record<string, unknown> = { duration_ms: a.finished_at.getTime() - a.started_at.getTime() };
    if (a.heartbeat_at) data.last_heartbeat_at = a.heartbeat_at.toISOString();
    if (a.error) data.error = a.error;
    if (a.outcome === "lease_expired") data.possible_duplicate = true;
    push(a.finished_at, OUTCOME_KIND[a.outcome], a.attempt, a.worker_id, data);
    if (a.retry_at) push(a.finished_at, "retry_scheduled", a.attempt, null, { run_at: a.retry_at.toISOString() });
  }
  if (input.running) {
    const r = input.running;
    push(r.claimedAt, "claimed", r.attempt, r.workerId, { lease_until: r.leaseUntil?.toISOString() ?? null });
    if (r.heartbeatAt) push(r.heartbeatAt, "heartbeat", r.attempt, r.workerId, null);
  }
  if (input.succeeded) {
    const s = input.succeeded;
    push(s.claimedAt, "claimed", s.attempt, s.workerId, null);
    push(s.finishedAt, "succeeded", s.attempt, s.workerId, { duration_ms: s.finishedAt.getTime() - s.claimedAt.getTime() });
  }
  for (const e of input.events) push(e.at, e.kind, e.attempt, e.actor, e.data);
  return out.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.order - b.order)).map(({ order: _order, ...event }) => event);
};
