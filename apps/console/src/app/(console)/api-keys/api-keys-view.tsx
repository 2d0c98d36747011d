"use client";
import { ZApiKeyCreate } from "@porter/api/schemas/control-plane";
import { API_KEY_FIELDS } from "@porter/contracts/control-plane";
import { useQuery } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { Tag } from "../../../components/badges";
import { type Column, DataTable } from "../../../components/data-table";
import { FormError } from "../../../components/form-error";
import { JobTypeScope, toggled } from "../../../components/job-type-scope";
import { Page } from "../../../components/page";
import { useViewer } from "../../../components/providers";
import { Empty, errorMessage } from "../../../components/states";
import { useAction } from "../../../components/use-action";
import { ago, dateTime } from "../../../lib/format";
import { type RouterOutputs, useTRPC } from "../../../lib/trpc";

type ApiKey = RouterOutputs["apiKeys"]["list"][number];
type CreatedKey = RouterOutputs["apiKeys"]["create"];

const COLUMNS: ReadonlyArray<Column<ApiKey>> = [
  { header: "Key id", className: "mono", cell: (k) => `pk_${k.id}_…` },
  { header: "Name", cell: (k) => k.name || "—" },
  { header: "Tenants", cell: (k) => k.tenant_ids.join(", ") },
  { header: "Job types", cell: (k) => (k.job_types.includes("*") ? "all" : k.job_types.join(", ")) },
  {
    header: "Created",
    cell: (k) => (
      <span title={dateTime(k.created_at)}>
        {ago(k.created_at)} {k.created_by ? <span className="muted">by {k.created_by}</span> : null}
      </span>
    ),
  },
  { header: "Last used", cell: (k) => (k.last_used_at ? ago(k.last_used_at) : "—") },
  {
    header: "Status",
    cell: (k) =>
      k.revoked_at ? (
        <Tag tone="bad" title={dateTime(k.revoked_at)}>
          revoked {ago(k.revoked_at)}
        </Tag>
      ) : (
        <Tag tone="ok">active</Tag>
      ),
  },
];

export function ApiKeysView() {
  const trpc = useTRPC();
  const viewer = useViewer();
  const keys = useQuery(trpc.apiKeys.list.queryOptions());
  const refreshes = [trpc.apiKeys];
  const [isCreating, setCreating] = useState(false);
  const [created, setCreated] = useState<CreatedKey | null>(null);
  const revoke = useAction(trpc.apiKeys.revoke.mutationOptions(), { refreshes, success: (r) => `Revoked key ${r.id}.` });
  const isAdmin = viewer.can("admin");

  const confirmRevoke = (id: string) =>
    revoke.confirm({
      title: "Revoke API key",
      summary: (
        <p>
          Revoke key <code>pk_{id}_…</code>? Producers using it are refused (401) from the next request. This cannot be undone.
        </p>
      ),
      confirmLabel: "Revoke key",
      reason: "optional",
      isDestructive: true,
      input: ({ reason }) => ({ id, ...(reason ? { reason } : {}) }),
    });

  return (
    <Page
      title="API keys"
      description="Producer credentials, scoped to tenants and job types. A key is shown once when created; only a hash of its secret is stored."
      actions={
        isAdmin ? (
          <button
            type="button"
            className="button primary"
            onClick={() => {
              setCreating(true);
              setCreated(null);
            }}
            disabled={isCreating}
          >
            New API key
          </button>
        ) : null
      }
    >
      {created ? (
        <section className="panel secret" aria-label="New API key">
          <h2>Key {created.id} created — copy it now</h2>
          <p>
            This is the only time the key is shown. Store it in your secret manager; producers send it as <code>Authorization: Bearer …</code>.
          </p>
          <div className="secret-row">
            <input readOnly value={created.key} aria-label="The new API key" data-testid="new-api-key" onFocus={(e) => e.target.select()} />
            <button type="button" className="button" onClick={() => void navigator.clipboard?.writeText(created.key)}>
              Copy
            </button>
            <button type="button" className="button" onClick={() => setCreated(null)}>
              Done
            </button>
          </div>
        </section>
      ) : null}
      {isCreating && isAdmin ? (
        <CreateKeyForm
          onCancel={() => setCreating(false)}
          onCreated={(key) => {
            setCreating(false);
            setCreated(key);
          }}
        />
      ) : null}

      <DataTable
        query={keys}
        columns={COLUMNS}
        rowKey={(k) => k.id}
        caption="API keys"
        loadingLabel="Loading keys…"
        {...(isAdmin
          ? {
              rowLabel: (k: ApiKey) => `key ${k.id}`,
              rowActions: (k: ApiKey) =>
                k.revoked_at ? null : (
                  <button type="button" className="button small danger" onClick={() => confirmRevoke(k.id)} aria-label={`Revoke key ${k.id}`}>
                    Revoke
                  </button>
                ),
            }
          : {})}
        empty={<Empty title="No API keys yet">{isAdmin ? "Create one with “New API key”." : "An admin can create one."}</Empty>}
      />
    </Page>
  );
}

/** Name, tenants (checkboxes) and job types (all, or a chosen list); validated with ZApiKeyCreate. */
function CreateKeyForm({ onCancel, onCreated }: { onCancel: () => void; onCreated: (key: CreatedKey) => void }) {
  const trpc = useTRPC();
  const tenants = useQuery(trpc.tenants.list.queryOptions());
  const create = useAction(trpc.apiKeys.create.mutationOptions(), { refreshes: [trpc.apiKeys], success: (r) => `Created key ${r.id}.`, onDone: onCreated });
  const [name, setName] = useState("");
  const [chosenTenants, setTenants] = useState<string[]>([]);
  const [isAllTypes, setAllTypes] = useState(true);
  const [chosenTypes, setTypes] = useState<string[]>([]);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [formError, setFormError] = useState<string | null>(null);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const input = { name, tenant_ids: chosenTenants, job_types: isAllTypes ? ["*"] : chosenTypes };
    const parsed = ZApiKeyCreate.safeParse(input);
    if (!parsed.success) {
      setErrors(Object.fromEntries(parsed.error.issues.map((i) => [String(i.path[0]), i.message])));
      return;
    }
    setErrors({});
    setFormError(null);
    try {
      await create.runAsync(parsed.data);
    } catch (error) {
      setFormError(errorMessage(error));
    }
  };

  return (
    <section className="panel" aria-label="New API key form">
      <h2>New API key</h2>
      <form className="config-form" onSubmit={submit} noValidate>
        <div className="fields">
          <div className="field">
            <label htmlFor="key-name">{API_KEY_FIELDS.name.label}</label>
            <input id="key-name" name="name" value={name} onChange={(e) => setName(e.target.value)} placeholder={API_KEY_FIELDS.name.placeholder} />
          </div>
          <fieldset className={`field${errors.tenant_ids ? " has-error" : ""}`} aria-describedby={errors.tenant_ids ? "key-tenants-error" : undefined}>
            <legend>{API_KEY_FIELDS.tenant_ids.label}</legend>
            {(tenants.data ?? []).map((t) => (
              <label key={t.id} className="check">
                <input type="checkbox" checked={chosenTenants.includes(t.id)} onChange={(e) => setTenants((l) => toggled(l, t.id, e.target.checked))} /> {t.id}
              </label>
            ))}
            {errors.tenant_ids ? (
              <small id="key-tenants-error" className="field-error" role="alert">
                {errors.tenant_ids}
              </small>
            ) : null}
          </fieldset>
          <JobTypeScope
            legend={API_KEY_FIELDS.job_types.label}
            allLabel="All job types (*)"
            isAll={isAllTypes}
            onAllChange={setAllTypes}
            chosen={chosenTypes}
            onChosenChange={setTypes}
            error={errors.job_types}
          />
        </div>
        <FormError message={formError} />
        <div className="actions">
          <button type="submit" className="button primary" disabled={create.isPending}>
            {create.isPending ? "Creating…" : "Create key"}
          </button>
          <button type="button" className="button" onClick={onCancel}>
            Cancel
          </button>
        </div>
      </form>
    </section>
  );
}
