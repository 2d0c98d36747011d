import type { Metadata } from "next";
import { FlowCharts } from "../../../../components/flow-charts";
import { AdminOnly } from "./admin-only";
import { TenantStatusLinksView } from "./status-links-view";
import { TenantUsageSection } from "./usage-section";
import { WebhookAllowlistSection } from "./webhook-allowlist-section";
import { TenantWebhooksSection } from "./webhooks-section";

export const metadata: Metadata = { title: "Tenant" };

/** One tenant's page: its usage and flow (issue 14), its status links and its webhooks (issue 13); for admins, the webhook allow-list. */
export default async function TenantPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  const tenantId = decodeURIComponent(id);
  return (
    <TenantStatusLinksView
      tenantId={tenantId}
      top={
        <>
          <TenantUsageSection tenantId={tenantId} />
          <FlowCharts scope={{ tenant_id: tenantId }} />
        </>
      }
    >
      <TenantWebhooksSection tenantId={tenantId} />
      <AdminOnly>
        <WebhookAllowlistSection />
      </AdminOnly>
    </TenantStatusLinksView>
  );
}
