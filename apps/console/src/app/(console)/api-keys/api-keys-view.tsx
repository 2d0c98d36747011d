"use client";
import { ZApiKeyCreate } from "@porter/api/schemas/control-plane";
import { API_KEY_FIELDS } from "@porter/contracts/control-plane";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { Tag } from "../../../components/badges";
import { Dialog } from "../../../components/dialog";
import { useViewer } from "../../../components/providers";
import { Empty, errorMessage, QueryView } from "../../../components/states";
import { ago, dateTime } from "../../../lib/format";
import { useTRPC } from "../../../lib/trpc";

export function ApiKeysView() {
  const trpc = useTRPC();
  const viewer = useViewer();
  const queryClient = useQueryClient();
  const keys = useQuery(trpc.apiKeys.list.queryOptions());
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.apiKeys.pathKey() });
  const revoke = useMutation(trpc.apiKeys.revoke.mutationOptions({ onSuccess: refresh }));
  const [isCreating, setCreating] = useState(false);
  const [created, setCreated] = useState<{ key: string; id: string } | null>(null);
  const [revoking, setRevoking] = useState<string | null>(null);
  const [revokeError, setRevokeError] = useState<string | null>(null);
  const [flash, setFlash] = useState<string | null>(null);
  const isAdmin = viewer.can("admin");

  return (
    <section aria-labelledby="page-title">
      <header className="page-head">
        <div>
          <h1 id="page-title">API keys</h1>
          <p className="intro">Producer credentials, scoped to tenants and job types. A key is shown once when created; only a hash of its secret is stored.</p>
        </div>
        {isAdmin ? (
          <button type="button" className="button primary" onClick={() => (setCreating(true), setCreated(null))} disabled={isCreating}>
            New API key
          </button>
        ) : null}
      </header>
      {flash ? (
        <p className="flash" role="status">
          {flash}
        </p>
      ) : null}
      {created ? (
        <div className="panel secret" role="region" aria-label="New API key">
          <h2>Key {created.id} created — copy it now</h2>
          <p>This is the only time the key is shown. Store it in your secret manager; producers send it as <code>Authorization: Bearer …</code>.</p>
          <div className="secret-row">
            <input readOnly value={created.key} aria-label="The new API key" data-testid="new-api-key" onFocus={(e) => e.target.select()} />
            <button type="button" className="button" onClick={() => void navigator.clipboard?.writeText(created.key)}>
              Copy
            </button>
            <button type="button" className="button" onClick={() => setCreated(null)}>
              Done
            </button>
          </div>
        </div>
      ) : null}
      {isCreating && isAdmin ? (
        <CreateKeyForm
          onCancel={() => setCreating(false)}
          onCreated={(key) => {
            setCreating(false);
            setCreated(key);
            void refresh();
          }}
        />
      ) : null}

      <QueryView query={keys} loadingLabel="Loading keys…">
        {(rows) =>
          rows.length === 0 ? (
            <Empty title="No API keys yet">{isAdmin ? "Create one with “New API key”." : "An admin can create one."}</Empty>
          ) : (
            <div className="table-wrap">
              <table className="grid">
                <thead>
                  <tr>
                    <th scope="col">Key id</th>
                    <th scope="col">Name</th>
                    <th scope="col">Tenants</th>
                    <th scope="col">Job types</th>
                    <th scope="col">Created</th>
                    <th scope="col">Last used</th>
                    <th scope="col">Status</th>
                    {isAdmin ? <th scope="col">Actions</th> : null}
                  </tr>
                </thead>
                <tbody>
                  {rows.map((k) => (
                    <tr key={k.id}>
                      <th scope="row" className="mono">
                        pk_{k.id}_…
                      </th>
                      <td>{k.name || "—"}</td>
                      <td>{k.tenant_ids.join(", ")}</td>
                      <td>{k.job_types.includes("*") ? "all" : k.job_types.join(", ")}</td>
                      <td title={dateTime(k.created_at)}>
                        {ago(k.created_at)} {k.created_by ? <span className="muted">by {k.created_by}</span> : null}
                      </td>
                      <td>{k.last_used_at ? ago(k.last_used_at) : "—"}</td>
                      <td>{k.revoked_at ? <Tag tone="bad" title={dateTime(k.revoked_at)}>revoked {ago(k.revoked_at)}</Tag> : <Tag tone="ok">active</Tag>}</td>
                      {isAdmin ? (
                        <td>
                          {k.revoked_at ? null : (
                            <button type="button" className="button small danger" onClick={() => (setRevoking(k.id), setRevokeError(null))} aria-label={`Revoke key ${k.id}`}>
                              Revoke
                            </button>
                          )}
                        </td>
                      ) : null}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </QueryView>

      <Dialog open={revoking !== null} title="Revoke API key" onClose={() => setRevoking(null)}>
        <p>
          Revoke key <code>pk_{revoking}_…</code>? Producers using it are refused (401) from the next request. This cannot be undone.
        </p>
        {revokeError ? (
          <p className="form-error" role="alert">
            {revokeError}
          </p>
        ) : null}
        <div className="actions">
          <button
            type="button"
            className="button danger"
            disabled={revoke.isPending}
            onClick={async () => {
              try {
                await revoke.mutateAsync({ id: revoking! });
                setFlash(`Revoked key ${revoking}.`);
                setRevoking(null);
              } catch (error) {
                setRevokeError(errorMessage(error));
              }
            }}
          >
            Revoke key
          </button>
          <button type="button" className="button" onClick={() => setRevoking(null)}>
            Cancel
          </button>
        </div>
      </Dialog>
    </section>
  );
}

/** Name, tenants (checkboxes) and job types (all, or a chosen list); validated with ZApiKeyCreate. */
function CreateKeyForm({ onCancel, onCreated }: { onCancel: () => void; onCreated: (key: { key: string; id: string }) => void }) {
  const trpc = useTRPC();
  const tenants = useQuery(trpc.tenants.list.queryOptions());
  const types = useQuery(trpc.jobTypes.list.queryOptions());
  const create = useMutation(trpc.apiKeys.create.mutationOptions());
  const [name, setName] = useState("");
  const [chosenTenants, setTenants] = useState<string[]>([]);
  const [isAllTypes, setAllTypes] = useState(true);
  const [chosenTypes, setTypes] = useState<string[]>([]);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [formError, setFormError] = useState<string | null>(null);
  const toggle = (list: string[], value: string, on: boolean) => (on ? [...list, value] : list.filter((v) => v !== value));

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
      const created = await create.mutateAsync(parsed.data);
      onCreated({ key: created.key, id: created.id });
    } catch (error) {
      setFormError(errorMessage(error));
    }
  };

  return (
    <div className="panel" role="region" aria-label="New API key form">
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
                <input type="checkbox" checked={chosenTenants.includes(t.id)} onChange={(e) => setTenants((l) => toggle(l, t.id, e.target.checked))} /> {t.id}
              </label>
            ))}
            {errors.tenant_ids ? (
              <small id="key-tenants-error" className="field-error" role="alert">
                {errors.tenant_ids}
              </small>
            ) : null}
          </fieldset>
          <fieldset className={`field${errors.job_types ? " has-error" : ""}`}>
            <legend>{API_KEY_FIELDS.job_types.label}</legend>
            <label className="check">
              <input type="checkbox" checked={isAllTypes} onChange={(e) => setAllTypes(e.target.checked)} /> All job types (*)
            </label>
            {!isAllTypes
              ? (types.data ?? []).map((t) => (
                  <label key={t.id} className="check">
                    <input type="checkbox" checked={chosenTypes.includes(t.id)} onChange={(e) => setTypes((l) => toggle(l, t.id, e.target.checked))} /> {t.id}
                  </label>
                ))
              : null}
            {errors.job_types ? (
              <small className="field-error" role="alert">
                {errors.job_types}
              </small>
            ) : null}
          </fieldset>
        </div>
        {formError ? (
          <p className="form-error" role="alert">
            {formError}
          </p>
        ) : null}
        <div className="actions">
          <button type="submit" className="button primary" disabled={create.isPending}>
            {create.isPending ? "Creating…" : "Create key"}
          </button>
          <button type="button" className="button" onClick={onCancel}>
            Cancel
          </button>
        </div>
      </form>
    </div>
  );
}
