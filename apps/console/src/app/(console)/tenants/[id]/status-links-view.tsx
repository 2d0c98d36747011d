"use client";
import { ZStatusLinkCreate } from "@porter/api/schemas/status-links";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { type FormEvent, type ReactNode, useState } from "react";
import { Tag } from "../../../../components/badges";
import { type Column, DataTable } from "../../../../components/data-table";
import { FormError } from "../../../../components/form-error";
import { JobTypeScope } from "../../../../components/job-type-scope";
import { Page } from "../../../../components/page";
import { useViewer } from "../../../../components/providers";
import { Empty, errorMessage } from "../../../../components/states";
import { useAction } from "../../../../components/use-action";
import { ago, dateTime } from "../../../../lib/format";
import { type RouterOutputs, useTRPC } from "../../../../lib/trpc";

type StatusLink = RouterOutputs["tenants"]["links"]["list"][number];
type CreatedLink = RouterOutputs["tenants"]["links"]["create"];

const EXPIRIES = [
  { label: "1 hour", seconds: 3600 },
  { label: "1 day", seconds: 86400 },
  { label: "7 days", seconds: 7 * 86400 },
  { label: "30 days", seconds: 30 * 86400 },
  { label: "90 days", seconds: 90 * 86400 },
] as const;

const COLUMNS: ReadonlyArray<Column<StatusLink>> = [
  { header: "Link id", className: "mono", cell: (l) => l.id },
  { header: "Job types", cell: (l) => (l.job_types.length ? l.job_types.join(", ") : "all") },
  {
    header: "Created",
    cell: (l) => (
      <span title={dateTime(l.created_at)}>
        {ago(l.created_at)} {l.created_by ? <span className="muted">by {l.created_by}</span> : null}
      </span>
    ),
  },
  { header: "Expires", cell: (l) => <span title={dateTime(l.expires_at)}>{dateTime(l.expires_at)}</span> },
  { header: "Last used", cell: (l) => (l.last_used_at ? ago(l.last_used_at) : "—") },
  {
    header: "Status",
    cell: (l) =>
      l.state === "revoked" ? (
        <Tag tone="bad" title={l.revoked_at ? dateTime(l.revoked_at) : undefined}>
          revoked
        </Tag>
      ) : l.state === "expired" ? (
        <Tag tone="warn">expired</Tag>
      ) : (
        <Tag tone="ok">active</Tag>
      ),
  },
];

/**
 * A tenant's page in the console: `top` first (its usage), then its status links — issue one
 * (shown once), list, revoke — then the page's other sections (`children`).
 */
export function TenantStatusLinksView({ tenantId, top, children }: { tenantId: string; top?: ReactNode; children?: ReactNode }) {
  const trpc = useTRPC();
  const viewer = useViewer();
  const links = useQuery(trpc.tenants.links.list.queryOptions({ tenant_id: tenantId }));
  const refreshes = [trpc.tenants.links];
  const [created, setCreated] = useState<CreatedLink | null>(null);
  const revoke = useAction(trpc.tenants.links.revoke.mutationOptions(), { refreshes, success: (r) => `Revoked status link ${r.id}.` });
  const isOperator = viewer.can("operator");
  const url = created ? `${window.location.origin}${created.path}` : "";

  const confirmRevoke = (id: string) =>
    revoke.confirm({
      title: "Revoke status link",
      summary: (
        <p>
          Revoke link <code>{id}</code>? Anyone using it, or the cookie it set, is refused from the next request. This cannot be undone.
        </p>
      ),
      confirmLabel: "Revoke link",
      reason: "optional",
      isDestructive: true,
      input: ({ reason }) => ({ id, ...(reason ? { reason } : {}) }),
    });

  return (
    <Page
      title={`Tenant ${tenantId}`}
      description="What this tenant uses of each pool against its weight and quota, its flow, and how it sees its own jobs: status links and webhooks."
    >
      <p>
        <Link href="/tenants">All tenants</Link> · <Link href={`/jobs?tenant=${encodeURIComponent(tenantId)}`}>This tenant's jobs</Link> ·{" "}
        <a href={`/status/${encodeURIComponent(tenantId)}`}>Status page (operator view)</a>
      </p>
      {top}
      <h2>Status links</h2>
      <p className="muted">
        A status link lets the tenant see its own jobs at /status/&lt;tenant&gt; without a console account. A link is shown once; only a hash of its token is
        stored.
      </p>
      {created ? (
        <section className="panel secret" aria-label="New status link">
          <h3>Link {created.id} issued — copy it now</h3>
          <p>This is the only time the link is shown. It expires {dateTime(created.expires_at)}.</p>
          <div className="secret-row">
            <input readOnly value={url} aria-label="The new status link" data-testid="new-status-link" onFocus={(e) => e.target.select()} />
            <button type="button" className="button" onClick={() => void navigator.clipboard?.writeText(url)}>
              Copy
            </button>
            <button type="button" className="button" onClick={() => setCreated(null)}>
              Done
            </button>
          </div>
        </section>
      ) : null}
      {isOperator && !created ? <IssueLinkForm tenantId={tenantId} onCreated={setCreated} /> : null}
      <DataTable
        query={links}
        columns={COLUMNS}
        rowKey={(l) => l.id}
        caption="Status links"
        loadingLabel="Loading status links…"
        {...(isOperator
          ? {
              rowLabel: (l: StatusLink) => `status link ${l.id}`,
              rowActions: (l: StatusLink) =>
                l.state === "active" ? (
                  <button type="button" className="button small danger" onClick={() => confirmRevoke(l.id)} aria-label={`Revoke status link ${l.id}`}>
                    Revoke
                  </button>
                ) : null,
            }
          : {})}
        empty={<Empty title="No status links yet">{isOperator ? "Issue one above." : "An operator can issue one."}</Empty>}
      />
      {children}
    </Page>
  );
}

/** Expiry and job types (all, or a chosen list); validated with ZStatusLinkCreate. */
function IssueLinkForm({ tenantId, onCreated }: { tenantId: string; onCreated: (link: CreatedLink) => void }) {
  const trpc = useTRPC();
  const create = useAction(trpc.tenants.links.create.mutationOptions(), {
    refreshes: [trpc.tenants.links],
    success: (r) => `Issued status link ${r.id}.`,
    onDone: onCreated,
  });
  const [expires, setExpires] = useState<number>(7 * 86400);
  const [isAllTypes, setAllTypes] = useState(true);
  const [chosenTypes, setTypes] = useState<string[]>([]);
  const [formError, setFormError] = useState<string | null>(null);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const parsed = ZStatusLinkCreate.safeParse({ tenant_id: tenantId, expires_in_s: expires, job_types: isAllTypes ? [] : chosenTypes });
    if (!parsed.success) {
      setFormError(parsed.error.issues.map((i) => i.message).join("; "));
      return;
    }
    if (!isAllTypes && chosenTypes.length === 0) {
      setFormError("choose at least one job type, or all");
      return;
    }
    setFormError(null);
    try {
      await create.runAsync(parsed.data);
    } catch (error) {
      setFormError(errorMessage(error));
    }
  };

  return (
    <section className="panel" aria-label="Issue a status link">
      <form className="config-form" onSubmit={submit} noValidate>
        <div className="fields">
          <div className="field">
            <label htmlFor="link-expires">Expires after</label>
            <select id="link-expires" value={expires} onChange={(e) => setExpires(Number(e.target.value))}>
              {EXPIRIES.map((o) => (
                <option key={o.seconds} value={o.seconds}>
                  {o.label}
                </option>
              ))}
            </select>
          </div>
          <JobTypeScope
            legend="Job types shown"
            allLabel="All job types"
            isAll={isAllTypes}
            onAllChange={setAllTypes}
            chosen={chosenTypes}
            onChosenChange={setTypes}
          />
        </div>
        <FormError message={formError} />
        <div className="actions">
          <button type="submit" className="button primary" disabled={create.isPending}>
            {create.isPending ? "Issuing…" : "Issue status link"}
          </button>
        </div>
      </form>
    </section>
  );
}
