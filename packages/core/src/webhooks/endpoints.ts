// Tenant webhook endpoints (issue 13, deliverable 5): an operator adds an https endpoint for a
// tenant with the terminal states it wants (`succeeded`, `dead`, `cancelled`, `expired`); the
// secret is returned once. Rotation keeps the previous secret signing for an overlap (default
// 24 h, at most 7 days). Every change is audited, never a secret. The URL passes the SSRF guard
// (ssrf.ts) when saved.
import { randomBytes } from "node:crypto";
import { AppError, WEBHOOK_EVENTS, type WebhookEvent } from "@porter/contracts";
import type { ControlDb, ControlTx } from "@porter/db/prisma";
import { writeAuditTx } from "../control-plane/audit";
import { newWebhookSecret } from "../dlq/webhook-endpoint";
import { assertWebhookUrl } from "./ssrf";

/** A tenant endpoint as listed: never a secret, only the current one's last 4 characters. */
export type TenantWebhookView = {
  id: string;
  tenant_id: string;
  url: string;
  events: WebhookEvent[];
  description: string | null;
  enabled: boolean;
  secret_hint: string;
  /** When the previous secret stops signing (a rotation's overlap), or null. */
  previous_secret_expires_at: string | null;
  created_at: string;
  updated_at: string;
};

type Row = {
  id: string;
  tenantId: string;
  url: string;
  events: string[];
  description: string | null;
  enabled: boolean;
  secret: string;
  previousSecretExpiresAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
};

const viewOf = (e: Row, now = new Date()): TenantWebhookView => ({
  id: e.id,
  tenant_id: e.tenantId,
  url: e.url,
  events: e.events as WebhookEvent[],
  description: e.description,
  enabled: e.enabled,
  secret_hint: `…${e.secret.slice(-4)}`,
  previous_secret_expires_at: e.previousSecretExpiresAt && e.previousSecretExpiresAt > now ? e.previousSecretExpiresAt.toISOString() : null,
  created_at: e.createdAt.toISOString(),
  updated_at: e.updatedAt.toISOString(),
});

/** What the audit log keeps of an endpoint (no secret). */
const audited = (e: Row) => ({ tenant_id: e.tenantId, url: e.url, events: e.events, description: e.description, enabled: e.enabled });

/** Events deduplicated in WEBHOOK_EVENTS' order; empty or unknown → 400. */
const normalizeEvents = (events: readonly string[]): WebhookEvent[] => {
  const unknown = events.filter((e) => !(WEBHOOK_EVENTS as readonly string[]).includes(e));
  if (unknown.length) throw new AppError("BAD_REQUEST", { message: `unknown webhook events: ${unknown.join(", ")} (known: ${WEBHOOK_EVENTS.join(", ")})` });
  const set = new Set(events);
  const out = WEBHOOK_EVENTS.filter((e) => set.has(e));
  if (out.length === 0) throw new AppError("BAD_REQUEST", { message: "subscribe to at least one event" });
  return out;
};

const tenantEndpoint = async (tx: ControlTx, id: string): Promise<Row> => {
  const row = await tx.webhookEndpoint.findUnique({ where: { id } });
  if (row?.scope !== "tenant") throw new AppError("NOT_FOUND", { message: `webhook endpoint ${id} not found` });
  return row;
};

/** A tenant's endpoints, oldest first. */
export const listTenantWebhooks = async (db: ControlDb, tenantId: string): Promise<TenantWebhookView[]> => {
  const rows = await db.webhookEndpoint.findMany({ where: { scope: "tenant", tenantId }, orderBy: [{ createdAt: "asc" }, { id: "asc" }] });
  const now = new Date();
  return rows.map((r) => viewOf(r, now));
};

/** One tenant endpoint (404 when missing or not tenant-scoped). */
export const getTenantWebhook = async (db: ControlDb, id: string): Promise<TenantWebhookView> => viewOf(await tenantEndpoint(db, id));

/**
 * Adds an endpoint for a tenant: an https URL that passes the SSRF guard (400 naming the address
 * otherwise), at least one event. Returns it with its secret (shown once). Audited as
 * `webhook_endpoint.create`. Unknown tenant: 404.
 */
export const createTenantWebhook = async (
  db: ControlTx,
  params: { tenantId: string; url: string; events: readonly string[]; description?: string | null; actor: string },
): Promise<TenantWebhookView & { secret: string }> => {
  const events = normalizeEvents(params.events);
  return db.$transaction(async (tx) => {
    if (!(await tx.tenant.findUnique({ where: { id: params.tenantId }, select: { id: true } }))) {
      throw new AppError("NOT_FOUND", { message: `tenant ${params.tenantId} not found` });
    }
    await assertWebhookUrl(tx, params.url);
    const secret = newWebhookSecret();
    const row = await tx.webhookEndpoint.create({
      data: {
        id: `we_${randomBytes(9).toString("hex")}`,
        scope: "tenant",
        tenantId: params.tenantId,
        url: params.url,
        events,
        description: params.description ?? null,
        secret,
      },
    });
    await writeAuditTx(tx, [{ actor: params.actor, action: "webhook_endpoint.create", objectType: "webhook_endpoint", objectId: row.id, after: audited(row) }]);
    return { ...viewOf(row), secret };
  });
};

/** Changes an endpoint's URL (guarded again), events, description or enabled flag. Audited as `webhook_endpoint.update`. */
export const updateTenantWebhook = async (
  db: ControlTx,
  params: { id: string; url?: string; events?: readonly string[]; description?: string | null; enabled?: boolean; actor: string },
): Promise<TenantWebhookView> => {
  const events = params.events ? normalizeEvents(params.events) : undefined;
  return db.$transaction(async (tx) => {
    const before = await tenantEndpoint(tx, params.id);
    if (params.url !== undefined && params.url !== before.url) await assertWebhookUrl(tx, params.url);
    const row = await tx.webhookEndpoint.update({
      where: { id: params.id },
      data: {
        ...(params.url !== undefined ? { url: params.url } : {}),
        ...(events ? { events } : {}),
        ...(params.description !== undefined ? { description: params.description } : {}),
        ...(params.enabled !== undefined ? { enabled: params.enabled } : {}),
        updatedAt: new Date(),
      },
    });
    await writeAuditTx(tx, [
      {
        actor: params.actor,
        action: "webhook_endpoint.update",
        objectType: "webhook_endpoint",
        objectId: row.id,
        before: audited(before),
        after: audited(row),
      },
    ]);
    return viewOf(row);
  });
};

/** The longest rotation overlap: 7 days. */
export const MAX_ROTATION_OVERLAP_S = 7 * 86400;

/**
 * Rotates an endpoint's secret: a new one signs from now on (returned once); the old one also
 * signs for `overlapSeconds` (default 24 h, 0 … 7 days), so a subscriber can deploy the new secret
 * without rejecting deliveries. A rotation during an overlap ends the older overlap (only one
 * previous secret is kept). Audited as `webhook_endpoint.rotate_secret` (the overlap, no secret).
 */
export const rotateTenantWebhookSecret = async (
  db: ControlTx,
  params: { id: string; overlapSeconds?: number; actor: string; now?: Date },
): Promise<{ id: string; secret: string; previous_secret_expires_at: string | null }> => {
  const overlap = params.overlapSeconds ?? 86400;
  if (!Number.isInteger(overlap) || overlap < 0 || overlap > MAX_ROTATION_OVERLAP_S) {
    throw new AppError("BAD_REQUEST", { message: "the overlap is 0 to 604800 seconds (7 days)" });
  }
  const now = params.now ?? new Date();
  return db.$transaction(async (tx) => {
    const before = await tenantEndpoint(tx, params.id);
    const secret = newWebhookSecret();
    const expiresAt = overlap > 0 ? new Date(now.getTime() + overlap * 1000) : null;
    await tx.webhookEndpoint.update({
      where: { id: params.id },
      data: { secret, previousSecret: expiresAt ? before.secret : null, previousSecretExpiresAt: expiresAt, updatedAt: now },
    });
    await writeAuditTx(tx, [
      {
        actor: params.actor,
        action: "webhook_endpoint.rotate_secret",
        objectType: "webhook_endpoint",
        objectId: params.id,
        after: { tenant_id: before.tenantId, overlap_seconds: overlap, previous_secret_expires_at: expiresAt?.toISOString() ?? null },
      },
    ]);
    return { id: params.id, secret, previous_secret_expires_at: expiresAt?.toISOString() ?? null };
  });
};

/**
 * Deletes an endpoint. Deliveries already enqueued fail permanently (the handler finds no
 * endpoint); its delivery log ages out. Audited as `webhook_endpoint.delete`.
 */
export const deleteTenantWebhook = async (db: ControlTx, params: { id: string; actor: string }): Promise<{ id: string; deleted: true }> =>
  db.$transaction(async (tx) => {
    const before = await tenantEndpoint(tx, params.id);
    await tx.webhookEndpoint.delete({ where: { id: params.id } });
    await tx.$executeRaw`DELETE FROM webhook_outbox WHERE endpoint_id = ${params.id}`;
    await writeAuditTx(tx, [
      { actor: params.actor, action: "webhook_endpoint.delete", objectType: "webhook_endpoint", objectId: params.id, before: audited(before) },
    ]);
    return { id: params.id, deleted: true as const };
  });
