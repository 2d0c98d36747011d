// The SSRF guard's allow-list (webhook_allowed_networks): networks a webhook may reach although
// they are private, loopback or link-local — an internal receiver, a test's 127.0.0.1/32. Admins
// only; every change audited.
import { AppError } from "@porter/contracts";
import type { ControlDb, ControlTx } from "@porter/db/prisma";
import { writeAuditTx } from "../control-plane/audit";

export type AllowedNetworkView = { cidr: string; note: string; created_by: string; created_at: string };

type Raw = { cidr: string; note: string; created_by: string; created_at: Date };

/** Every allowed network, in address order. */
export const listAllowedNetworks = async (db: ControlDb): Promise<AllowedNetworkView[]> =>
  (await db.$queryRaw<Raw[]>`SELECT cidr::text AS cidr, note, created_by, created_at FROM webhook_allowed_networks ORDER BY cidr`).map((r) => ({
    cidr: r.cidr,
    note: r.note,
    created_by: r.created_by,
    created_at: r.created_at.toISOString(),
  }));

/** `10.0.0.0/8`, `127.0.0.1` (a host: /32 or /128) as PostgreSQL's canonical cidr; a malformed network or host bits set: 400. */
const canonical = async (tx: ControlTx, cidr: string): Promise<string> => {
  try {
    const rows = await tx.$queryRaw<Array<{ cidr: string }>>`SELECT (${cidr}::cidr)::text AS cidr`;
    return rows[0]!.cidr;
  } catch {
    throw new AppError("BAD_REQUEST", {
      message: `${cidr} is not a network in CIDR notation with its host bits zero (e.g. 10.1.0.0/16, 127.0.0.1/32, ::1/128)`,
    });
  }
};

/** Allows a network (idempotent: the note is updated). Audited as `webhook_network.allow`. */
export const addAllowedNetwork = async (db: ControlTx, params: { cidr: string; note?: string; actor: string }): Promise<AllowedNetworkView> =>
  db.$transaction(async (tx) => {
    const cidr = await canonical(tx, params.cidr);
    const rows = await tx.$queryRaw<Raw[]>`
      INSERT INTO webhook_allowed_networks (cidr, note, created_by) VALUES (${cidr}::cidr, ${params.note ?? ""}, ${params.actor})
      ON CONFLICT (cidr) DO UPDATE SET note = EXCLUDED.note
      RETURNING cidr::text AS cidr, note, created_by, created_at`;
    await writeAuditTx(tx, [
      { actor: params.actor, action: "webhook_network.allow", objectType: "webhook_network", objectId: cidr, after: { cidr, note: params.note ?? "" } },
    ]);
    const r = rows[0]!;
    return { cidr: r.cidr, note: r.note, created_by: r.created_by, created_at: r.created_at.toISOString() };
  });

/** Removes a network (404 when not allowed). Audited as `webhook_network.disallow`. */
export const removeAllowedNetwork = async (db: ControlTx, params: { cidr: string; actor: string }): Promise<{ cidr: string; removed: true }> =>
  db.$transaction(async (tx) => {
    const cidr = await canonical(tx, params.cidr);
    const n = await tx.$executeRaw`DELETE FROM webhook_allowed_networks WHERE cidr = ${cidr}::cidr`;
    if (n === 0) throw new AppError("NOT_FOUND", { message: `${cidr} is not allowed` });
    await writeAuditTx(tx, [{ actor: params.actor, action: "webhook_network.disallow", objectType: "webhook_network", objectId: cidr, before: { cidr } }]);
    return { cidr, removed: true as const };
  });
