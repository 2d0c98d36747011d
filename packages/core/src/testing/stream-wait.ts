/**
 * How long a stream test waits for an event to become readable. The log is read below
 * `pg_snapshot_xmin(pg_current_snapshot())`, which is cluster-wide: any transaction with an xid in
 * ANY database of the server holds every reader back until it ends. Under `npm test` other files'
 * databases share the cluster (template copies, migrations, held locks), so a few seconds of
 * hold-back is normal there; the tests check what is delivered and in which order, not how soon.
 */
export const XMIN_WAIT = { timeout: 30_000 } as const;
