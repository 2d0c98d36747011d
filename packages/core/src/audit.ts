import type { Db } from "./db";

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
 * Appends audit rows (the table refuses UPDATE and DELETE). Call it on the same client as the
 * change it records, inside the same transaction, so the two commit or fail together.
 */
export const writeAudit = async (db: Db, entries: AuditEntry[]): Promise<void> => {
  if (entries.length === 0) return;
  await db.query(
    `INSERT INTO audit_log (actor, action, object_type, object_id, before, after, reason)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::jsonb[], $7::text[])`,
    [
      entries.map((e) => e.actor),
      entries.map((e) => e.action),
      entries.map((e) => e.objectType),
      entries.map((e) => e.objectId),
      entries.map((e) => (e.before === undefined ? null : JSON.stringify(e.before))),
      entries.map((e) => (e.after === undefined ? null : JSON.stringify(e.after))),
      entries.map((e) => e.reason ?? null),
    ],
  );
};
