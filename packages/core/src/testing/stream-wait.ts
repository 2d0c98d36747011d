/**
 * How long a stream test waits for an event to become readable. The log is read below
 * `pg_snapshot_xmin(pg_current_snapshot())`, which is cluster-wide: any transaction with an xid in
 * ANY database of the server holds every reader back until it ends. Under `npm test` every file's
 * database shares one server, and some files hold a transaction open for many seconds on purpose
 * (an effect's `fn` held mid-transaction until the test cuts its connection): held back past a
 * 5 s wait in CI (stop 24), once past 30 s in a full run. So the stream's tests run on a server of
 * their own (`useTestDatabase({ isOwnServer: true })`), and this wait only absorbs their own
 * machine's load: they check what is delivered and in which order, not how soon.
 */
export const XMIN_WAIT = { timeout: 30_000 } as const;
