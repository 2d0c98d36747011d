"use client";
import { ZAllowlistAdd } from "@porter/api/schemas/webhooks";
import { useQuery } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { type Column, DataTable } from "../../../../components/data-table";
import { FormError } from "../../../../components/form-error";
import { Empty, errorMessage } from "../../../../components/states";
import { useAction } from "../../../../components/use-action";
import { ago, dateTime } from "../../../../lib/format";
import { type RouterOutputs, useTRPC } from "../../../../lib/trpc";

type Network = RouterOutputs["webhooks"]["allowlist"]["list"][number];

/**
 * The SSRF guard's allow-list (admins only; the page renders this for admins): networks every
 * webhook may reach although they are loopback, private or link-local.
 */
export function WebhookAllowlistSection() {
  const trpc = useTRPC();
  const networks = useQuery(trpc.webhooks.allowlist.list.queryOptions());
  const refreshes = [trpc.webhooks.allowlist];
  const remove = useAction(trpc.webhooks.allowlist.remove.mutationOptions(), { refreshes, success: (r) => `Removed ${r.cidr} from the allow-list.` });
  const add = useAction(trpc.webhooks.allowlist.add.mutationOptions(), { refreshes, success: (r) => `Allowed ${r.cidr}.` });
  const [cidr, setCidr] = useState("");
  const [note, setNote] = useState("");
  const [formError, setFormError] = useState<string | null>(null);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const parsed = ZAllowlistAdd.safeParse({ cidr, ...(note.trim() ? { note } : {}) });
    if (!parsed.success) {
      setFormError(parsed.error.issues.map((i) => i.message).join("; "));
      return;
    }
    setFormError(null);
    try {
      await add.runAsync(parsed.data);
      setCidr("");
      setNote("");
    } catch (error) {
      setFormError(errorMessage(error));
    }
  };

  const columns: ReadonlyArray<Column<Network>> = [
    { header: "Network", className: "mono", cell: (n) => n.cidr },
    { header: "Note", isWrapping: true, cell: (n) => n.note || "—" },
    {
      header: "Added",
      cell: (n) => (
        <span title={dateTime(n.created_at)}>
          {ago(n.created_at)} {n.created_by ? <span className="muted">by {n.created_by}</span> : null}
        </span>
      ),
    },
  ];

  return (
    <>
      <h2>Webhook allow-list (all tenants)</h2>
      <p className="muted">
        Webhook URLs may not resolve to loopback, private (RFC 1918, fc00::/7), link-local (169.254/16, fe80::/10), CGNAT, unspecified or multicast addresses
        unless the address is in one of these networks. Checked when an endpoint is saved and before every delivery.
      </p>
      <section className="panel" aria-label="Allow a network">
        <form className="config-form" onSubmit={submit} noValidate>
          <div className="fields">
            <div className="field">
              <label htmlFor="allow-cidr">Network (CIDR)</label>
              <input id="allow-cidr" value={cidr} onChange={(e) => setCidr(e.target.value)} placeholder="10.1.0.0/16" />
            </div>
            <div className="field">
              <label htmlFor="allow-note">Note</label>
              <input id="allow-note" value={note} onChange={(e) => setNote(e.target.value)} placeholder="why" />
            </div>
          </div>
          <FormError message={formError} />
          <div className="actions">
            <button type="submit" className="button primary" disabled={add.isPending}>
              Allow network
            </button>
          </div>
        </form>
      </section>
      <DataTable
        query={networks}
        columns={columns}
        rowKey={(n) => n.cidr}
        caption="Allowed networks"
        loadingLabel="Loading the allow-list…"
        rowLabel={(n) => `network ${n.cidr}`}
        rowActions={(n) => (
          <button
            type="button"
            className="button small danger"
            aria-label={`Remove ${n.cidr}`}
            onClick={() =>
              remove.confirm({
                title: "Remove allowed network",
                summary: (
                  <p>
                    Remove <code>{n.cidr}</code>? Webhooks into it are refused from their next attempt on.
                  </p>
                ),
                confirmLabel: "Remove network",
                reason: "optional",
                isDestructive: true,
                input: () => ({ cidr: n.cidr }),
              })
            }
          >
            Remove
          </button>
        )}
        empty={<Empty title="No networks allowed">Webhooks reach public addresses only.</Empty>}
      />
    </>
  );
}
