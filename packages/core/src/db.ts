import type { Queryable } from "@porter/db/pool";

/** A pool, a checked-out client, or a bare client: anything core can run statements on. */
export type Db = Queryable;

export { allOn, inOwnTransaction, inTransaction } from "@porter/db/pool";
