import type { Metadata } from "next";
import { AdminOnly } from "./admin-only";
import { TenantStatusLinksView } from "./status-links-view";
import { WebhookAllowlistSection } from "./webhook-allowlist-section";
import { TenantWebhooksSection } from "./webhooks-section";

export const metadata: Metadata = { title: "Tenant" };

/** One tenant's page: its status links and its webhooks (issue 13); for admins, the webhook allow-list. */
export default async function TenantPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  const tenantId = decodeURIComponent(id);
  return (
    <TenantStatusLinksView tenantId={tenantId}>
      <TenantWebhooksSection tenantId={tenantId} />
      <AdminOnly>
        <WebhookAllowlistSection />
      </AdminOnly>
    </TenantStatusLinksView>
  );
}
