import type { Metadata } from "next";
import { TenantStatusLinksView } from "./status-links-view";

export const metadata: Metadata = { title: "Tenant" };

/** One tenant's page: its status links (issue 13). */
export default async function TenantPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  return <TenantStatusLinksView tenantId={decodeURIComponent(id)} />;
}
