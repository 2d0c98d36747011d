"use client";
import { ZTenantCreate, ZTenantFields } from "@porter/api/schemas/control-plane";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
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
      fields={[
        { name: "id", label: "Tenant id", kind: "text", isId: true, placeholder: "tenant_D" },
        { name: "name", label: "Name", kind: "text" },
        { name: "weight", label: "Fair-share weight", kind: "int" },
        { name: "max_running", label: "Running quota", kind: "int", isNullable: true, help: "running jobs of this tenant; empty = none" },
        { name: "start_rate_per_second", label: "Start rate", kind: "number", unit: "jobs/s", isNullable: true, help: "jobs started per second, all workers; empty = unlimited" },
        { name: "rate_per_second", label: "Enqueue rate", kind: "number", unit: "jobs/s", isNullable: true, help: "empty = unlimited" },
        { name: "backlog_cap", label: "Backlog cap", kind: "int", isNullable: true, help: "queued jobs; empty = unlimited" },
        { name: "max_priority", label: "Priority ceiling", kind: "int", isNullable: true },
        { name: "max_attempts", label: "Attempts ceiling", kind: "int", isNullable: true },
        { name: "status_origins", label: "Status page origins", kind: "list", help: "origins allowed to embed the tenant's status page, comma-separated" },
      ]}
      createSchema={ZTenantCreate}
      editSchema={ZTenantFields}
      defaults={{ weight: 1 }}
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
      ]}
    />
  );
}
