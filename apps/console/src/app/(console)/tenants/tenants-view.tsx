"use client";
import { ZTenantCreate, ZTenantFields } from "@porter/api/schemas/control-plane";
import { createDefaults, TENANT } from "@porter/contracts/control-plane";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { entityFields } from "../../../components/config-form";
import { ConfigPage, orNone } from "../../../components/config-page";
import { useTRPC } from "../../../lib/trpc";

export function TenantsView() {
  const trpc = useTRPC();
  const list = useQuery(trpc.tenants.list.queryOptions());
  return (
    <ConfigPage
      title="Tenants"
      noun="tenant"
      intro="Fair-share weight among tenants with ready work, a ceiling on running jobs, and admission limits (enqueue rate, backlog) that refuse with 429 + Retry-After."
      query={list}
      fields={entityFields(TENANT)}
      createSchema={ZTenantCreate}
      editSchema={ZTenantFields}
      defaults={createDefaults(TENANT)}
      create={trpc.tenants.create.mutationOptions()}
      update={trpc.tenants.update.mutationOptions()}
      refreshes={[trpc.tenants]}
      columns={[
        { header: "Tenant", cell: (t) => <Link href={`/jobs?tenant=${encodeURIComponent(t.id)}`}>{t.id}</Link> },
        { header: "Name", cell: (t) => t.name || "—" },
        { header: "Weight", cell: (t) => t.weight, isNumeric: true },
        { header: "Running quota", cell: (t) => orNone(t.max_running), isNumeric: true },
        { header: "Rate", cell: (t) => orNone(t.rate_per_second, "/s"), isNumeric: true },
        { header: "Backlog cap", cell: (t) => orNone(t.backlog_cap), isNumeric: true },
        { header: "Ceilings (priority / attempts)", cell: (t) => `${orNone(t.max_priority)} / ${orNone(t.max_attempts)}` },
        { header: "Status links", cell: (t) => <Link href={`/tenants/${encodeURIComponent(t.id)}`}>Status links</Link> },
      ]}
    />
  );
}
