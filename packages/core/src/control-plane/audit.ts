import type { Prisma } from "@porter/db/prisma";
import { type Db, inTransaction } from "../db";

/** One audit row as the writer states it; the database sets its time, and its actor from `actor`. */
export type AuditEntry = {
  actor: string;
  action: string;
  objectType: string;
  objectId: string;
  before?: unknown;
  after?: unknown;
  reason?: string | null;
};

/**
 * Appends audit rows. Call it on the same client as the change it records, inside the same
 * transaction, so the two commit or fail together (on a pool it opens a transaction of its own).
 *
 * The table is append-only for the runtime role (INSERT and SELECT only, and a trigger refuses
 * UPDATE, DELETE and TRUNCATE), and its BEFORE INSERT trigger stamps each row: `at` from the
 * database's clock, `actor` from the transaction-local setting `porter.actor`, set here right
 * before the INSERT — so no caller can backdate a row or write it under another name, and a row
 * without an actor is refused. Consecutive entries of one actor go in one statement.
 */
export const writeAudit = async (db: Db, entries: AuditEntry[]): Promise<void> => {
  if (entries.length === 0) return;
  await inTransaction(db, async (client) => {
    for (const group of byActor(entries)) {
      // Transaction-local (`true`): the setting ends with this transaction, on a pooled connection too.
      await client.query(`SELECT set_config('porter.actor', $1, true)`, [group[0]!.actor]);
      await client.query(
        `INSERT INTO audit_log (action, object_type, object_id, before, after, reason)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::jsonb[], $6::text[])`,
        [
          group.map((e) => e.action),
          group.map((e) => e.objectType),
          group.map((e) => e.objectId),
          group.map((e) => (e.before === undefined ? null : JSON.stringify(e.before))),
          group.map((e) => (e.after === undefined ? null : JSON.stringify(e.after))),
          group.map((e) => e.reason ?? null),
        ],
      );
    }
  });
};

/**
 * {@link writeAudit} inside a Prisma interactive transaction (`prisma.$transaction(async (tx) => …)`),
 * on the transaction of the change it records: the actor is set with the same transaction-local
 * `set_config('porter.actor', …, true)` the audit trigger reads, then the rows are inserted.
 */
export const writeAuditTx = async (tx: Prisma.TransactionClient, entries: AuditEntry[]): Promise<void> => {
  for (const group of byActor(entries)) {
    const actor = group[0]!.actor;
    await tx.$queryRaw`SELECT set_config('porter.actor', ${actor}, true)`;
    await tx.auditLog.createMany({
      data: group.map((e) => ({
        // The trigger overwrites `actor` (and `at`) whatever the insert says; the model requires one.
        actor,
        action: e.action,
        objectType: e.objectType,
        objectId: e.objectId,
        ...(e.before === undefined ? {} : { before: e.before as Prisma.InputJsonValue }),
        ...(e.after === undefined ? {} : { after: e.after as Prisma.InputJsonValue }),
        reason: e.reason ?? null,
      })),
    });
  }
};

/** Runs of consecutive entries with the same actor, in order (so ids keep the entries' order). */
const byActor = (entries: AuditEntry[]): AuditEntry[][] => {
  const groups: AuditEntry[][] = [];
  for (const entry of entries) {
    const last = groups.at(-1);
    if (last && last[0]!.actor === entry.actor) last.push(entry);
    else groups.push([entry]);
  }
  return groups;
};
