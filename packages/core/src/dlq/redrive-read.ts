import type { Db } from "../db";
import { noSkips, type RedriveSkipCounts } from "./redrive-plan";

export type RedriveStatus = "running" | "completed" | "aborted";

/** A redrive as the API, the console and the CLI show it (the contract's ZRedrive). */
export type RedriveView = {
  redrive_id: string;
  status: RedriveStatus;
  actor: string;
  reason: string | null;
  selection: Record<string, unknown>;
  force: boolean;
  rate_per_s: number;
  created_at: string;
  cutoff: string;
  total: number;
  redriven: number;
  skipped: RedriveSkipCounts;
  /** (redriven + skipped) / total, 0…1. */
  progress: number;
  /** Seconds left at the redrive's rate, null when finished. */
  eta_s: number | null;
  finished_at: string | null;
  aborted_by: string | null;
};

type Row = {
  id: string;
  status: RedriveStatus;
  actor: string;
  reason: string | null;
  selection: Record<string, unknown>;
  force: boolean;
  rate_per_s: number;
  created_at: Date;
  cutoff: Date;
  total: number;
  redriven: number;
  skipped: Partial<RedriveSkipCounts>;
  finished_at: Date | null;
  aborted_by: string | null;
};

const COLUMNS = `id::text, status, actor, reason, selection, force, rate_per_s, created_at, cutoff, total, redriven, skipped, finished_at, aborted_by`;

/** A row as a {@link RedriveView}: progress from the counters, ETA from what is left and the rate. */
export const toRedriveView = (r: Row): RedriveView => {
  const skipped = { ...noSkips(), ...r.skipped };
  const done = r.redriven + Object.values(skipped).reduce((a, b) => a + b, 0);
  const left = Math.max(0, r.total - done);
  return {
    redrive_id: r.id,
    status: r.status,
    actor: r.actor,
    reason: r.reason,
    selection: r.selection,
    force: r.force,
    rate_per_s: r.rate_per_s,
    created_at: r.created_at.toISOString(),
    cutoff: r.cutoff.toISOString(),
    total: r.total,
    redriven: r.redriven,
    skipped,
    progress: r.total === 0 ? 1 : Math.min(1, done / r.total),
    eta_s: r.status === "running" ? Math.ceil(left / r.rate_per_s) : null,
    finished_at: r.finished_at?.toISOString() ?? null,
    aborted_by: r.aborted_by,
  };
};

/** One redrive, or null. */
export const getRedrive = async (db: Db, id: string): Promise<RedriveView | null> => {
  const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM redrives WHERE id = $1`, [id]);
  return rows[0] ? toRedriveView(rows[0]) : null;
};

/** Redrives, newest first, optionally of one status; offset-paginated (`next_cursor`). */
export const listRedrives = async (
  db: Db,
  params: { status?: RedriveStatus | undefined; offset?: number; limit: number },
): Promise<{ redrives: RedriveView[]; next_cursor: string | null }> => {
  const offset = params.offset ?? 0;
  const { rows } = await db.query<Row>(
    `SELECT ${COLUMNS} FROM redrives WHERE ($1::text IS NULL OR status = $1) ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT $3`,
    [params.status ?? null, offset, params.limit + 1],
  );
  return {
    redrives: rows.slice(0, params.limit).map(toRedriveView),
    next_cursor: rows.length > params.limit ? String(offset + params.limit) : null,
  };
};
