import type { TJobState as JobState, StreamEventData, StreamEventName } from "@porter/contracts";
import type { Db } from "../db";
import { safeFailure } from "../reads/safe-failure";

// The live status stream's log (issue 13): `job_stream`, written by the statement triggers of
// sql/routines/stream.sql and by the claim. A row holds the events of one statement for one tenant
// and state, its jobs in arrays; reads unnest them into one event per job, in (xid, id, k) order (k:
// the job's 1-based place in its row), and only below the reader's snapshot xmin (every transaction
// older than it has ended), so a cursor never skips a transaction that was still open when it read
// and commits later. The SSE `id` is `<xid>-<id>-<k>`: opaque to clients.

/** How long the log keeps events: a client reconnecting with an older Last-Event-ID is reset. */
export const STREAM_RETENTION_MS = 60 * 60 * 1000;
/** Events per read (a reader loops while a page is full); a page may end inside a row. */
export const STREAM_PAGE = 1000;

/** A place in the log: after the event `k` (1-based) of row (xid, id). */
export type StreamCursor = { xid: bigint; id: bigint; k: number };
export const ZERO_CURSOR: StreamCursor = { xid: 0n, id: 0n, k: 0 };
/** The largest place in a row: a cursor at it is after the whole row. */
export const WHOLE_ROW = 2 ** 31 - 1;

export const formatCursor = (c: StreamCursor): string => `${c.xid}-${c.id}-${c.k}`;
/**
 * A Last-Event-ID as the stream gave it out, else null (a 400). The form of the releases before
 * rows held several events, `<xid>-<id>`, is after that whole row (its only event).
 */
export const parseCursor = (value: string): StreamCursor | null => {
  const m = /^(\d{1,20})-(\d{1,20})(?:-(\d{1,10}))?$/.exec(value);
  if (!m) return null;
  const xid = BigInt(m[1]!);
  const id = BigInt(m[2]!);
  const k = m[3] === undefined ? WHOLE_ROW : Number(m[3]);
  if (xid >= 2n ** 64n || id >= 2n ** 63n || k > WHOLE_ROW) return null;
  return { xid, id, k };
};
export const compareCursor = (a: StreamCursor, b: StreamCursor): number =>
  a.xid < b.xid ? -1 : a.xid > b.xid ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : a.k - b.k;

/** One row of the log, as read. */
export type StreamRow = {
  cursor: StreamCursor;
  at: Date;
  jobId: string;
  tenantId: string;
  jobType: string;
  state: JobState;
  attempt: number;
  kind: "state" | "progress";
  progress: StreamEventData["progress"];
  /** The raw error's code, class and message (never sent as is: tenants get `safeFailure` of it). */
  failure: { code?: unknown; class?: unknown; message?: unknown } | null;
};

type RawRow = {
  xid: string;
  id: string;
  k: number;
  at: Date;
  job_id: string;
  tenant_id: string;
  job_type: string;
  state: JobState;
  attempt: number;
  kind: "state" | "progress";
  progress: StreamEventData["progress"];
  failure: StreamRow["failure"];
};
const rowOf = (r: RawRow): StreamRow => ({
  cursor: { xid: BigInt(r.xid), id: BigInt(r.id), k: r.k },
  at: r.at,
  jobId: r.job_id,
  tenantId: r.tenant_id,
  jobType: r.job_type,
  state: r.state,
  attempt: r.attempt,
  kind: r.kind,
  progress: r.progress,
  failure: r.failure,
});

/** A row of the log unnested into its events (`s` the row, `e` an event with its place `k`). */
const EVENTS = `job_stream s
  CROSS JOIN LATERAL unnest(s.job_ids, s.job_types, s.attempts, s.progresses, s.failures)
    WITH ORDINALITY AS e(job_id, job_type, attempt, progress, failure, k)`;
const COLUMNS = `s.xid::text AS xid, s.id::text AS id, e.k::int AS k, s.at, e.job_id::text AS job_id, s.tenant_id, e.job_type,
  s.state, e.attempt, s.kind, e.progress, e.failure`;

/**
 * Events after `after`, oldest first, of transactions that have all ended (xid below the snapshot's
 * xmin), at most `limit`; optionally only up to `upTo` (inclusive) and of one tenant (a resuming
 * subscriber's replay). Rows are found by the key (from `after`'s row on), then unnested.
 */
export const readStream = async (db: Db, params: { after: StreamCursor; upTo?: StreamCursor; tenantId?: string; limit?: number }): Promise<StreamRow[]> => {
  const { rows } = await db.query<RawRow>(
    `SELECT ${COLUMNS} FROM ${EVENTS}
      WHERE (s.xid, s.id) >= ($1::text::xid8, $2::bigint)
        AND (s.xid, s.id, e.k) > ($1::text::xid8, $2::bigint, $7::bigint)
        AND s.xid < pg_snapshot_xmin(pg_current_snapshot())
        AND ($3::text IS NULL OR (s.xid, s.id, e.k) <= ($3::text::xid8, $4::bigint, $8::bigint))
        AND ($5::text IS NULL OR s.tenant_id = $5)
      ORDER BY s.xid, s.id, e.k
      LIMIT $6`,
    [
      String(params.after.xid),
      String(params.after.id),
      params.upTo ? String(params.upTo.xid) : null,
      params.upTo ? String(params.upTo.id) : null,
      params.tenantId ?? null,
      params.limit ?? STREAM_PAGE,
      params.after.k,
      params.upTo ? params.upTo.k : null,
    ],
  );
  return rows.map(rowOf);
};

/**
 * Whether events after `after` exist that a read may not take yet (their transaction, or an older
 * one anywhere on the server, is still open): the reader then reads again shortly, as no further
 * wake-up may come for them.
 */
export const streamHeldBack = async (db: Db, after: StreamCursor): Promise<boolean> => {
  const { rows } = await db.query<{ held: boolean }>(
    // Rows after the cursor's own: that one was read (its transaction had ended), whole or in part.
    `SELECT EXISTS (SELECT 1 FROM job_stream WHERE (xid, id) > ($1::text::xid8, $2::bigint)
                       AND xid >= pg_snapshot_xmin(pg_current_snapshot())) AS held`,
    [String(after.xid), String(after.id)],
  );
  return rows[0]?.held === true;
};

/** The newest position a reader may start from: the last event of an ended transaction (or zero). */
export const streamHead = async (db: Db): Promise<StreamCursor> => {
  const { rows } = await db.query<{ xid: string; id: string; k: number }>(
    `SELECT xid::text AS xid, id::text AS id, cardinality(job_ids) AS k FROM job_stream
      WHERE xid < pg_snapshot_xmin(pg_current_snapshot())
      ORDER BY xid DESC, id DESC LIMIT 1`,
  );
  return rows[0] ? { xid: BigInt(rows[0].xid), id: BigInt(rows[0].id), k: rows[0].k } : ZERO_CURSOR;
};

/**
 * Whether a resume from `cursor` loses nothing: its event is still in the log (retention deletes
 * the oldest first, so every event after it is too). The zero cursor (the log was empty when the
 * client connected) counts as retained while nothing was ever pruned past… which the log cannot
 * tell; it is accepted.
 */
export const cursorRetained = async (db: Db, cursor: StreamCursor): Promise<boolean> => {
  if (cursor.id === 0n && cursor.xid === 0n) return true;
  // Its row: retention deletes whole rows.
  const { rowCount } = await db.query(`SELECT 1 FROM job_stream WHERE xid = $1::text::xid8 AND id = $2::bigint`, [String(cursor.xid), String(cursor.id)]);
  return (rowCount ?? 0) > 0;
};

/**
 * Retention: deletes events older than {@link STREAM_RETENTION_MS}, in batches (maintenance), from
 * the oldest end of the (xid, id) order and stopping at the first younger event: the log is always
 * a suffix of that order, so an event still in it has every later event with it
 * ({@link cursorRetained}). No index on `at`: one index fewer to write per event.
 */
export const pruneStream = async (db: Db, params: { now?: Date; batch?: number; retentionMs?: number } = {}): Promise<{ pruned: number }> => {
  const batch = params.batch ?? 10_000;
  let pruned = 0;
  for (;;) {
    const { rowCount } = await db.query(
      `WITH oldest AS (SELECT xid, id, at FROM job_stream ORDER BY xid, id LIMIT $3),
            young AS (SELECT xid, id FROM oldest
                       WHERE at >= coalesce($1::timestamptz, now()) - $2 * interval '1 millisecond'
                       ORDER BY xid, id LIMIT 1)
       DELETE FROM job_stream s USING oldest o
        WHERE s.xid = o.xid AND s.id = o.id
          AND NOT EXISTS (SELECT 1 FROM young y WHERE (o.xid, o.id) >= (y.xid, y.id))`,
      [params.now ?? null, params.retentionMs ?? STREAM_RETENTION_MS, batch],
    );
    pruned += rowCount ?? 0;
    if ((rowCount ?? 0) < batch) return { pruned };
  }
};

const FAILURE_STATES: ReadonlySet<JobState> = new Set(["RETRY_WAIT", "DEAD", "EXPIRED"]);

/** The SSE event name of a row. */
export const streamEventName = (row: Pick<StreamRow, "kind" | "state">): StreamEventName =>
  row.kind === "progress" ? "job.progress" : (`job.${row.state.toLowerCase()}` as StreamEventName);

/** The `data:` of a row (ZStreamEventData). */
export const streamEventData = (row: StreamRow, id = formatCursor(row.cursor)): StreamEventData => ({
  id,
  job_id: row.jobId,
  job_type: row.jobType,
  status: row.state,
  attempt: row.attempt,
  progress: row.progress ?? null,
  failure: row.kind === "state" && FAILURE_STATES.has(row.state) && row.failure ? safeFailure(row.failure) : null,
  at: row.at.toISOString(),
});

/**
 * The job's current state as a (synthetic) state event, for a new `?job_id=` subscriber, or null
 * when no such job exists. `cursor` is the reader's position taken BEFORE this read, so every
 * change after it is delivered too. `shownUntil`: the last of the job's events after `cursor`
 * already committed (read in the same statement, so in the same snapshot as the row): the row shows
 * their outcome, so the live fan-out skips the job's events up to it — without this, a reader held
 * back by the xmin bound would deliver them after the snapshot, older states after the current one.
 * null when the snapshot is at or before the cursor (nothing to skip).
 */
export const currentJobRow = async (db: Db, jobId: string, cursor: StreamCursor): Promise<{ row: StreamRow; shownUntil: StreamCursor | null } | null> => {
  const { rows } = await db.query<Omit<RawRow, "xid" | "id" | "k" | "kind"> & { shown_xid: string | null; shown_id: string | null; shown_k: number | null }>(
    `SELECT j.*, s.xid::text AS shown_xid, s.id::text AS shown_id, s.k AS shown_k
       FROM (SELECT job_id::text AS job_id, tenant_id, job_type, state, attempt, progress,
                    CASE WHEN state = 'RETRY_WAIT' THEN last_error END AS failure, coalesce(heartbeat_at, claimed_at, created_at) AS at
               FROM jobs WHERE job_id = $1::uuid
             UNION ALL
             SELECT job_id::text, tenant_id, job_type, state, attempt, progress, error, finished_at
               FROM finished_jobs WHERE job_id = $1::uuid
             LIMIT 1) j
       LEFT JOIN LATERAL (
         SELECT xid, id, array_position(job_ids, $1::uuid) AS k FROM job_stream
          WHERE (xid, id) >= ($2::xid8, $3::bigint) AND $1::uuid = ANY (job_ids)
            AND (xid, id, array_position(job_ids, $1::uuid)) > ($2::xid8, $3::bigint, $4::int)
          ORDER BY xid DESC, id DESC LIMIT 1) s ON true`,
    [jobId, String(cursor.xid), String(cursor.id), cursor.k],
  );
  const r = rows[0];
  if (!r) return null;
  const f = r.failure as Record<string, unknown> | null;
  const row = rowOf({
    job_id: r.job_id,
    tenant_id: r.tenant_id,
    job_type: r.job_type,
    state: r.state,
    attempt: r.attempt,
    progress: r.progress,
    at: r.at,
    xid: String(cursor.xid),
    id: String(cursor.id),
    k: cursor.k,
    kind: "state",
    failure: f ? { code: f.code, class: f.class, message: f.message } : null,
  });
  return { row, shownUntil: r.shown_xid === null ? null : { xid: BigInt(r.shown_xid), id: BigInt(r.shown_id!), k: r.shown_k! } };
};
