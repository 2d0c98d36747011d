import { AppError, type TEnqueueResult, type TJobState } from "@porter/contracts";
import pg from "pg";
import { type Db, inTransaction } from "../db";
import { admit } from "./admission";
import { arrayLiteral, textElement } from "./array-literal";
import type { Prepared } from "./enqueue-prepare";
import { reserveClocksSql } from "./fair-clock";
import { flowUpsertSql } from "./flow-write";

/** Channel a worker LISTENs on; the payload is the pool id. */
export const READY_CHANNEL = "porter_ready";

/** Rows per insert statement: a large batch goes as several, so Node builds the next while PostgreSQL inserts this one. */
const CHUNK = 250;

/**
 * The insert of an enqueue that is not coalesced: one transaction (the caller's, when `db` is a
 * client inside one) for admission control, the virtual-time reservation when `vfts` were not
 * reserved before it, and the batch in chunks of `CHUNK` rows; all of it or nothing. Results in
 * input order; an existing key with another payload is a 409 for the batch. The statement is
 * `insertSql` below: transition `enqueue` (sql/transitions.ts), shared with the coalesced path.
 *
 * In a transaction of its own (`db` a pool) and with no key twice in the batch, the keys go in by
 * a plain INSERT first: `ON CONFLICT`'s speculative insertion (a lock-manager token per row, an index
 * probe before the insert, a confirm record after it) is 7.5% of PostgreSQL's instructions per job
 * (docs/performance.md). A key that exists — a retried batch, or a concurrent producer's committed
 * key — fails that statement with a unique violation; the transaction is then rolled back (it is
 * ours: nothing of it stays) and the batch is run again with `ON CONFLICT DO NOTHING`, which
 * resolves each row as before. In a producer's transaction the `ON CONFLICT` path runs at once: a
 * failed statement would abort a transaction that is not Porter's to retry.
 */
export const insertBatch = async (
  db: Db,
  prepared: Prepared[],
  params: { now: Date; notifyPools: string[]; vfts: number[] | undefined },
): Promise<TEnqueueResult[]> => {
  if (!(db instanceof pg.Pool) || hasRepeatedKey(prepared)) return insertBatchOnce(db, prepared, params, false);
  const priorities = prepared.map((p) => p.priority); // admission may lower them; the retry admits afresh
  try {
    return await insertBatchOnce(db, prepared, params, true);
  } catch (error) {
    if (!isKeyClash(error)) throw error;
    prepared.forEach((p, i) => {
      p.priority = priorities[i]!;
    });
    return insertBatchOnce(db, prepared, params, false);
  }
};

/** A unique violation on the idempotency ledger: an existing (tenant, key) met a plain insert. */
const isKeyClash = (error: unknown): boolean => {
  const e = error as { code?: unknown; constraint?: unknown } | null;
  return e?.code === "23505" && e.constraint === "idempotency_keys_pkey";
};

/** The same (tenant, key) twice in one batch: the plain insert would fail on its own rows. */
const hasRepeatedKey = (prepared: Prepared[]): boolean => {
  const seen = new Set<string>();
  for (const p of prepared) {
    const key = `${p.input.tenant_id}\u0000${p.input.idempotency_key}`;
    if (seen.has(key)) return true;
    seen.add(key);
  }
  return false;
};

const insertBatchOnce = (
  db: Db,
  prepared: Prepared[],
  params: { now: Date; notifyPools: string[]; vfts: number[] | undefined },
  isPlain: boolean,
): Promise<TEnqueueResult[]> => {
  const { now, notifyPools, vfts } = params;
  return inTransaction(db, async (client) => {
    // Admission: a tenant over its arrival rate or backlog cap is refused (429, nothing stored), or,
    // where the queue defers, its jobs are accepted into the lowest class (priority 0).
    const deferred = await admit(
      client,
      prepared.map((p) => ({ tenantId: p.input.tenant_id, queueId: p.queueId, policy: p.policy })),
      now,
    );
    for (const i of deferred) prepared[i]!.priority = 0;
    // Inside the transaction that carries the insert (the caller's, or ours under admission):
    // committed with it, at the durability its owner chose — never turned asynchronous here.
    const vftsNow = vfts ?? (await reserveVirtualTime(client, prepared, { isOwnStatement: false }));
    // Chunk by chunk: while PostgreSQL inserts one, Node serializes the next (two cores at work).
    // Chunks in key order (after the virtual time, which follows input order): see `inKeyOrder`.
    const rows = prepared.length > CHUNK ? inKeyOrder(prepared) : prepared;
    const inserted = new Set<string>();
    let next = chunkArrays(rows.slice(0, CHUNK), vftsNow, now);
    for (let i = 0; i < rows.length; i += CHUNK) {
      const isLast = i + CHUNK >= rows.length;
      const pools = isLast ? notifyPools : [];
      const insert = isPlain ? insertChunkPlain(client, next, now, pools).then(() => null) : insertChunk(client, next, now, pools);
      if (!isLast) {
        insert.catch(() => undefined); // awaited just below
        next = chunkArrays(rows.slice(i + CHUNK, i + 2 * CHUNK), vftsNow, now);
      }
      const ids = await insert;
      if (ids) for (const id of ids) inserted.add(id);
    }
    // A plain insert that succeeded stored every row: all of them are new.
    if (isPlain) return prepared.map((p): TEnqueueResult => ({ job_id: p.jobId, status: "READY", deduplicated: false }));
    const outcomes = await resolveDuplicates(client, prepared, inserted);
    const refused = outcomes.find((o): o is AppError => o instanceof AppError);
    if (refused) throw refused; // aborts the transaction: nothing of the batch stays
    return outcomes as TEnqueueResult[];
  }).catch((error: unknown) => {
    throw asInputError(error); // a value PostgreSQL refused: the batch is refused (400), nothing stays
  });
};

/**
 * `prepared` sorted by (tenant, key) in PostgreSQL's "C" order — the order of their UTF-8 bytes —
 * and by input position within a key. An inserted key stays locked to other producers until the
 * transaction ends, and each statement inserts its keys sorted in that same order
 * (`ORDER BY … COLLATE "C"`): so every producer takes the keys of a batch of several chunks in one
 * global order and none can hold a key another holds while waiting for one of its own ("deadlock
 * detected" between two batches of overlapping keys sent in different orders). Neither a tenant id
 * nor a key holds NUL (the contracts refuse it, and PostgreSQL's text cannot store it), so
 * "tenant NUL key" sorts as the pair does. Results keep input order: they are placed by `ord`.
 */
const inKeyOrder = (prepared: Prepared[]): Prepared[] => {
  // Below U+D800, JavaScript's string order (UTF-16 code units) is the UTF-8 byte order: no bytes to make.
  if (prepared.every((p) => !AT_OR_ABOVE_D800.test(p.input.tenant_id) && !AT_OR_ABOVE_D800.test(p.input.idempotency_key))) {
    return [...prepared].sort(
      (a, b) => compareUnits(a.input.tenant_id, b.input.tenant_id) || compareUnits(a.input.idempotency_key, b.input.idempotency_key) || a.ord - b.ord,
    );
  }
  const sortKeys = prepared.map((p) => ({ p, bytes: Buffer.from(`${p.input.tenant_id}\u0000${p.input.idempotency_key}`, "utf8") }));
  sortKeys.sort((a, b) => Buffer.compare(a.bytes, b.bytes) || a.p.ord - b.p.ord);
  return sortKeys.map((k) => k.p);
};
const AT_OR_ABOVE_D800 = /[\uD800-\uFFFF]/;
const compareUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** SQLSTATE class 22 (data exception): PostgreSQL refused a value (NUL in text, a date out of range…). */
export const isDataError = (error: unknown): boolean => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && code.startsWith("22");
};

/**
 * A data exception as the caller's 400 — its input could not be stored — naming the SQLSTATE but
 * never PostgreSQL's message or context, which may quote the payload. Anything else as it is.
 */
export const asInputError = (error: unknown): unknown =>
  isDataError(error)
    ? new AppError("BAD_REQUEST", {
        message: `a value of this request cannot be stored (PostgreSQL refused it with SQLSTATE ${(error as { code: string }).code}): check for NUL characters, lone surrogates and out-of-range dates`,
        details: { sqlstate: (error as { code: string }).code },
      })
    : error;

/** JSON string literal (ids and names from the registry need no escaping beyond this). */
const str = (value: string): string => JSON.stringify(value);

/**
 * One chunk as the statement's parameters: one array literal per column, assembled from each
 * payload's JSON text already made for the size check. PostgreSQL reads arrays with `unnest`
 * about a third faster than the same rows as a JSON document (jsonb_to_recordset), and building
 * the literals here costs no more than building the document did.
 */
export const chunkArrays = (chunk: Prepared[], vfts: number[] | undefined, now: Date): string[] => {
  const nowMs = now.getTime();
  const n = chunk.length;
  const cols: Array<Array<string | number>> = Array.from({ length: 17 }, () => new Array(n));
  for (let i = 0; i < n; i++) {
    const p = chunk[i]!;
    const input = p.input;
    cols[0]![i] = p.ord;
    cols[1]![i] = p.jobId;
    cols[2]![i] = textElement(input.job_type);
    cols[3]![i] = textElement(p.queueId);
    cols[4]![i] = textElement(input.tenant_id);
    cols[5]![i] = textElement(p.payloadJson);
    cols[6]![i] = p.priority;
    cols[7]![i] = textElement(input.idempotency_key);
    cols[8]![i] = p.maxAttempts;
    cols[9]![i] = p.timeoutS;
    cols[10]![i] = p.notBefore ? p.notBefore.toISOString() : "NULL";
    cols[11]![i] = p.deadlineAt ? p.deadlineAt.toISOString() : "NULL";
    cols[12]![i] = p.runAt.getTime() === nowMs ? "NULL" : p.runAt.toISOString();
    cols[13]![i] = p.createdAt.getTime() === nowMs ? "NULL" : p.createdAt.toISOString();
    cols[14]![i] = textElement(p.traceId);
    cols[15]![i] = vfts ? vfts[p.ord]! : "NULL";
    cols[16]![i] = textElement(p.traceparent);
  }
  return cols.map(arrayLiteral);
};

/**
 * Inserts one chunk (see `chunkArrays`) in one statement: the idempotency ledger decides which rows
 * are new (ON CONFLICT DO NOTHING also absorbs duplicates inside the batch), and only those reach
 * `jobs`. NOTIFY for `notifyPools` goes in the same statement when it inserted anything (delivered
 * at commit). With `reserve`, the statement also reserves the jobs' virtual time (their `vft` is
 * null in the document) — for a statement that commits on its own. Returns the job ids inserted.
 */
export const insertChunk = async (db: Db, columns: string[], now: Date, notifyPools: string[], options: { reserve?: boolean } = {}): Promise<Set<string>> => {
  const { rows: inserted } = await db.query<{ job_id: string }>({
    name: options.reserve ? "porter.enqueue_reserving" : "porter.enqueue",
    text: options.reserve ? INSERT_RESERVING_SQL : INSERT_SQL,
    values: [...columns, now, notifyPools],
  });
  return new Set(inserted.map((r) => r.job_id));
};

/**
 * `insertChunk` with the keys inserted without `ON CONFLICT` (see `insertBatch`): every row of the
 * chunk is new and stored, or the statement fails with a unique violation on `idempotency_keys_pkey`.
 */
const insertChunkPlain = async (db: Db, columns: string[], now: Date, notifyPools: string[]): Promise<void> => {
  await db.query({ name: "porter.enqueue_plain", text: INSERT_PLAIN_SQL, values: [...columns, now, notifyPools] });
};

const INPUT_CTE = `WITH input AS (
       SELECT * FROM unnest($1::int[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::jsonb[], $7::int[], $8::text[],
                            $9::int[], $10::int[], $11::timestamptz[], $12::timestamptz[], $13::timestamptz[],
                            $14::timestamptz[], $15::text[], $16::float8[], $17::text[])
         AS t(ord, job_id, job_type, queue_id, tenant_id, payload, priority, idempotency_key, max_attempts, timeout_s,
              not_before, deadline_at, run_at, created_at, trace_id, vft, traceparent)
     )`;
/** The job rows from `i` (the input, `vft` its virtual finish time expression). */
const JOBS_INSERT = (vft: string) => `INSERT INTO jobs (job_id, job_type, queue_id, tenant_id, payload, priority, idempotency_key, state, max_attempts,
                         timeout_s, not_before, deadline_at, run_at, trace_id, created_at, vft, traceparent)
       SELECT i.job_id, i.job_type, i.queue_id, i.tenant_id, i.payload, i.priority, i.idempotency_key, 'READY',
              i.max_attempts, i.timeout_s, i.not_before, i.deadline_at, coalesce(i.run_at, $18),
              -- W3C-style 32-hex trace id; derived from the (random-tailed, unique) job id when absent.
              coalesce(i.trace_id, replace(i.job_id::text, '-', '')), coalesce(i.created_at, $18), ${vft}, i.traceparent`;
/** NOTIFY per pool of $19 when `ins` inserted anything, and the rollups' arrivals. */
const AFTER_INSERT = `, flow AS (${flowUpsertSql("ins", "s.created_at", { arrivals: "count(*)" })}
     ), notified AS (
       SELECT pg_notify('${READY_CHANNEL}', pool) FROM unnest($19::text[]) AS pool WHERE EXISTS (SELECT 1 FROM ins)
     )
     -- A plain CTE runs only if read: the cross join with its one-row count reads it (a LEFT JOIN
     -- nothing selects from would be removed by the planner, and with it every NOTIFY).`;

const insertSql = (reserve: boolean): string => `${INPUT_CTE}${
  reserve
    ? `, groups AS (
       SELECT queue_id, tenant_id, count(*)::int AS n FROM input GROUP BY queue_id, tenant_id
     ), clocks AS (${reserveClocksSql("groups")}
     ), timed AS (
       SELECT i.job_id, c.last_vft - (c_n.n - row_number() OVER (PARTITION BY i.queue_id, i.tenant_id ORDER BY i.ord))::float8 / c.weight AS vft
         FROM input i
         JOIN clocks c ON (c.queue_id, c.tenant_id) = (i.queue_id, i.tenant_id)
         JOIN groups c_n ON (c_n.queue_id, c_n.tenant_id) = (i.queue_id, i.tenant_id)
     )`
    : ""
}, keys AS (
       INSERT INTO idempotency_keys (tenant_id, idempotency_key, job_id, created_at)
       SELECT tenant_id, idempotency_key, job_id, coalesce(created_at, $18)
         FROM input${reserve ? " CROSS JOIN (SELECT count(*) FROM clocks) AS clocks_first" : ""}
       -- One lock order for all producers (no deadlock): clock rows first (their reservation reads
       -- them all before a key is inserted), then keys by (tenant, key) in "C" order, the order
       -- batches of several chunks are chunked in (inKeyOrder); first occurrence wins.
       ORDER BY tenant_id COLLATE "C", idempotency_key COLLATE "C", ord
       ON CONFLICT DO NOTHING
       RETURNING job_id
     ), ins AS (
       ${JOBS_INSERT(reserve ? "tm.vft" : "i.vft")}
         FROM input i JOIN keys k ON k.job_id = i.job_id${reserve ? " JOIN timed tm ON tm.job_id = i.job_id" : ""}
       RETURNING job_id, queue_id, job_type, tenant_id, created_at
     )${AFTER_INSERT}
     SELECT ins.job_id FROM ins CROSS JOIN (SELECT count(*) FROM notified) n`;
const INSERT_SQL = insertSql(false);
/** The insert statement's text (bench/src/probe/enqueue-explain.ts explains it). */
export const INSERT_SQL_FOR_PROBES = INSERT_SQL;
const INSERT_RESERVING_SQL = insertSql(true);
/**
 * The plain statement (`insertChunkPlain`): every input row is a job, so the jobs come straight
 * from the input, read once (a CTE read twice is materialized: a copy of every row, payload
 * included), and the keys from the jobs' RETURNING, sorted (one lock order for all producers). A
 * key that exists fails the statement with a unique violation on `idempotency_keys_pkey`.
 */
const INSERT_PLAIN_SQL = `${INPUT_CTE}, ins AS (
       ${JOBS_INSERT("i.vft")}
         FROM input i
       RETURNING job_id, queue_id, job_type, tenant_id, idempotency_key, created_at
     ), keys AS (
       INSERT INTO idempotency_keys (tenant_id, idempotency_key, job_id, created_at)
       SELECT tenant_id, idempotency_key, job_id, created_at FROM ins ORDER BY tenant_id COLLATE "C", idempotency_key COLLATE "C"
     )${AFTER_INSERT}
     SELECT count(*)::int AS n FROM ins CROSS JOIN (SELECT count(*) FROM notified) n`;
/** The plain insert's text (bench/src/probe/enqueue-callgrind.ts counts it). */
export const INSERT_PLAIN_SQL_FOR_PROBES = INSERT_PLAIN_SQL;

/**
 * Outcomes in input order: new jobs as READY; every other row hit an existing idempotency key —
 * the same job type and payload (jsonb equality: key order does not matter) is that job,
 * deduplicated; anything else is a 409 for that row. The 409 names the existing job only when it
 * is of the request's job type: the key's tenant is the request's, and a caller allowed to enqueue
 * that type may see its jobs, but a job of another type may be outside the caller's scope (an API
 * key limited to some job types must not learn it exists, let alone its id).
 */
export const resolveDuplicates = async (db: Db, prepared: Prepared[], inserted: Set<string>): Promise<Array<TEnqueueResult | AppError>> => {
  const results: Array<TEnqueueResult | AppError> = new Array(prepared.length);
  const duplicates: Prepared[] = [];
  for (const p of prepared) {
    if (inserted.has(p.jobId)) results[p.ord] = { job_id: p.jobId, status: "READY", deduplicated: false };
    else duplicates.push(p);
  }
  if (duplicates.length === 0) return results;
  // A new statement sees keys committed by concurrent producers and earlier rows of this batch.
  const { rows: existing } = await db.query<{
    ord: number;
    job_id: string;
    state: TJobState | null;
    is_same: boolean;
    is_same_type: boolean;
  }>(
    `SELECT d.ord, k.job_id, coalesce(j.state, f.state) AS state,
            coalesce(j.job_type, f.job_type) = d.job_type AS is_same_type,
            coalesce(j.job_type, f.job_type) = d.job_type AND coalesce(j.payload, f.payload) = d.payload AS is_same
       FROM jsonb_to_recordset($1::jsonb) AS d(ord int, tenant_id text, idempotency_key text, job_type text, payload jsonb)
       JOIN idempotency_keys k ON (k.tenant_id, k.idempotency_key) = (d.tenant_id, d.idempotency_key)
       LEFT JOIN jobs j ON j.job_id = k.job_id
       LEFT JOIN finished_jobs f ON f.job_id = k.job_id`,
    [
      `[${duplicates
        .map(
          (d) =>
            `{"ord":${d.ord},"tenant_id":${str(d.input.tenant_id)},"idempotency_key":${str(d.input.idempotency_key)},`
            + `"job_type":${str(d.input.job_type)},"payload":${d.payloadJson}}`,
        )
        .join(",")}]`,
    ],
  );
  const byOrd = new Map(existing.map((e) => [e.ord, e]));
  for (const d of duplicates) {
    const found = byOrd.get(d.ord);
    if (!found) throw new Error(`idempotency key vanished during enqueue: ${d.input.idempotency_key}`);
    results[d.ord] = found.is_same
      ? { job_id: found.job_id, status: found.state ?? "READY", deduplicated: true }
      : found.is_same_type
        ? new AppError("CONFLICT", {
            message: `idempotency_key "${d.input.idempotency_key}" was already used with a different payload (job ${found.job_id})`,
            details: { index: d.ord, job_id: found.job_id, idempotency_key: d.input.idempotency_key },
          })
        : new AppError("CONFLICT", {
            message: `idempotency_key "${d.input.idempotency_key}" was already used by a job of another type`,
            details: { index: d.ord, idempotency_key: d.input.idempotency_key },
          });
  }
  return results;
};

/**
 * Weighted fair queuing (docs/scheduling.md): each (queue, tenant) group of n jobs reserves the
 * virtual finish times max(last_vft, queue clock) + 1/w … + n/w, in input order. One statement,
 * rows locked in (queue, tenant) order (no deadlock between producers).
 *
 * `isOwnStatement`: the statement runs on Porter's pool in a transaction of its own (autocommit),
 * before the insert's transaction. Only then does it commit with synchronous_commit off, which is
 * safe because it holds nothing acknowledged: a reservation lost in a crash (or left unused by a
 * refused batch) only moves the tenant's clock forward a little, and the jobs' own insert commits
 * durably afterwards. Otherwise it runs inside the transaction that carries the insert — a
 * producer's own transaction, or Porter's under admission control — and must not touch its
 * settings: `set_config(…, true)` lasts until that transaction ends, so it would make the caller's
 * COMMIT (its rows and the acknowledged jobs) asynchronous, lost in a crash. Returns each job's
 * vft by its input position.
 */
export const reserveVirtualTime = async (db: Db, prepared: Prepared[], options: { isOwnStatement: boolean }): Promise<number[]> => {
  const groups = new Map<string, { queue_id: string; tenant_id: string; members: Prepared[] }>();
  for (const p of prepared) {
    const key = `${p.queueId}\u0000${p.input.tenant_id}`;
    const group = groups.get(key) ?? { queue_id: p.queueId, tenant_id: p.input.tenant_id, members: [] };
    group.members.push(p);
    groups.set(key, group);
  }
  const { rows } = await db.query<{ queue_id: string; tenant_id: string; last_vft: number; weight: number }>({
    name: options.isOwnStatement ? "porter.reserve_vft_async" : "porter.reserve_vft",
    text: options.isOwnStatement ? RESERVE_VFT_ASYNC_SQL : RESERVE_VFT_SQL,
    values: [JSON.stringify([...groups.values()].map((g) => ({ queue_id: g.queue_id, tenant_id: g.tenant_id, n: g.members.length })))],
  });
  const vfts: number[] = new Array(prepared.length);
  for (const row of rows) {
    const members = groups.get(`${row.queue_id}\u0000${row.tenant_id}`)!.members;
    members.forEach((p, i) => {
      vfts[p.ord] = row.last_vft - (members.length - 1 - i) / row.weight;
    });
  }
  return vfts;
};

const RESERVE_VFT_GROUPS = `WITH g AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS t(queue_id text, tenant_id text, n int))`;
const RESERVE_VFT_SQL = `${RESERVE_VFT_GROUPS} ${reserveClocksSql("g")}`;
const RESERVE_VFT_ASYNC_SQL = `${RESERVE_VFT_GROUPS}, async AS (SELECT set_config('synchronous_commit', 'off', true)) ${reserveClocksSql("g", "async")}`;
