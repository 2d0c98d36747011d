import { randomBytes } from "node:crypto";
import { AppError } from "@porter/contracts";
import type { ControlDb, ControlTx } from "@porter/db/prisma";
import { writeAuditTx } from "../control-plane/audit";
import { assertWebhookUrl } from "../webhooks/ssrf";

/** The id of the one alerts endpoint (scope 'alerts'). */
export const ALERTS_ENDPOINT_ID = "alerts";

/** The alerts webhook as an admin sees it: never the secret, only its last 4 characters. */
export type AlertWebhookView = { id: string; url: string; tenant_id: string; enabled: boolean; secret_hint: string; updated_at: string };

/** A Standard Webhooks signing key: `whsec_` and the base64 of 24 random bytes. */
export const newWebhookSecret = (): string => `whsec_${randomBytes(24).toString("base64")}`;

type EndpointRow = { id: string; url: string; tenantId: string; enabled: boolean; secret: string; updatedAt: Date };

const viewOf = (e: EndpointRow): AlertWebhookView => ({
  id: e.id,
  url: e.url,
  tenant_id: e.tenantId,
  enabled: e.enabled,
  secret_hint: `…${e.secret.slice(-4)}`,
  updated_at: e.updatedAt.toISOString(),
});

/** The alerts endpoint, or null when none is configured. */
export const getAlertWebhook = async (db: ControlDb): Promise<AlertWebhookView | null> => {
  const row = await db.webhookEndpoint.findUnique({ where: { id: ALERTS_ENDPOINT_ID } });
  return row ? viewOf(row) : null;
};

/**
 * Configures the alerts endpoint: creates it with a new secret, or changes its URL, tenant and
 * enabled flag (a new secret with `rotateSecret`; the old one stops signing at once). Returns the
 * secret when it is new (created or rotated) — the only time it is shown — and "" otherwise.
 * Audited as `webhook_endpoint.set` (URL, tenant, enabled, whether the secret was rotated; never
 * the secret). An https URL only, passing the SSRF guard (400); an unknown tenant: 404.
 */
export const setAlertWebhook = async (
  db: ControlTx,
  params: { url: string; tenantId: string; enabled: boolean; rotateSecret: boolean; actor: string },
): Promise<AlertWebhookView & { secret: string }> => {
  if (!/^https:\/\//.test(params.url)) throw new AppError("BAD_REQUEST", { message: "the alerts webhook needs an https:// URL" });
  return db.$transaction(async (tx) => {
    if (!(await tx.tenant.findUnique({ where: { id: params.tenantId }, select: { id: true } }))) {
      throw new AppError("NOT_FOUND", { message: `tenant ${params.tenantId} not found` });
    }
    // The SSRF guard (webhooks/ssrf.ts): no loopback, private or link-local address unless allow-listed.
    await assertWebhookUrl(tx, params.url);
    const before = await tx.webhookEndpoint.findUnique({ where: { id: ALERTS_ENDPOINT_ID } });
    const secret = !before || params.rotateSecret ? newWebhookSecret() : undefined;
    const data = { url: params.url, tenantId: params.tenantId, enabled: params.enabled, ...(secret ? { secret } : {}) };
    const row = before
      ? await tx.webhookEndpoint.update({ where: { id: ALERTS_ENDPOINT_ID }, data: { ...data, updatedAt: new Date() } })
      : await tx.webhookEndpoint.create({ data: { id: ALERTS_ENDPOINT_ID, scope: "alerts", ...data, secret: secret! } });
    const audited = (e: EndpointRow) => ({ url: e.url, tenant_id: e.tenantId, enabled: e.enabled });
    await writeAuditTx(tx, [
      {
        actor: params.actor,
        action: "webhook_endpoint.set",
        objectType: "webhook_endpoint",
        objectId: ALERTS_ENDPOINT_ID,
        ...(before ? { before: audited(before) } : {}),
        after: { ...audited(row), secret_rotated: secret !== undefined },
      },
    ]);
    return { ...viewOf(row), secret: secret ?? "" };
  });
};

/** Removes the alerts endpoint (alerts keep firing and resolving; nothing is delivered). Audited when there was one. */
export const deleteAlertWebhook = async (db: ControlTx, params: { actor: string }): Promise<{ deleted: boolean }> =>
  db.$transaction(async (tx) => {
    const before = await tx.webhookEndpoint.findUnique({ where: { id: ALERTS_ENDPOINT_ID } });
    if (!before) return { deleted: false };
    await tx.webhookEndpoint.delete({ where: { id: ALERTS_ENDPOINT_ID } });
    await writeAuditTx(tx, [
      {
        actor: params.actor,
        action: "webhook_endpoint.delete",
        objectType: "webhook_endpoint",
        objectId: ALERTS_ENDPOINT_ID,
        before: { url: before.url, tenant_id: before.tenantId, enabled: before.enabled },
      },
    ]);
    return { deleted: true };
  });
