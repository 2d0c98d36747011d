"use client";
import { useQuery } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { Tag } from "../../../../components/badges";
import { CopyId } from "../../../../components/copy-id";
import { FormError } from "../../../../components/form-error";
import { errorMessage, QueryView } from "../../../../components/states";
import { useAction } from "../../../../components/use-action";
import { dateTime } from "../../../../lib/format";
import { useTRPC } from "../../../../lib/trpc";

/**
 * The alert webhook (admins): an HTTPS URL, the tenant its webhook.deliver jobs run under, enabled,
 * and the signing secret — shown once, when it is made or rotated; afterwards only its last 4.
 */
export function WebhookSection() {
  const trpc = useTRPC();
  const webhook = useQuery(trpc.dlq.webhook.get.queryOptions({}));
  const tenants = useQuery(trpc.tenants.list.queryOptions());
  const [secret, setSecret] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const save = useAction(trpc.dlq.webhook.set.mutationOptions(), {
    refreshes: [trpc.dlq],
    // The secret comes back only when it is new (created or rotated); "" when it was kept.
    success: (w) => (w.secret ? "Webhook saved: copy the new signing secret now, it is shown once." : "Webhook saved."),
    onDone: (w) => setSecret(w.secret || null),
  });
  const remove = useAction(trpc.dlq.webhook.delete.mutationOptions(), { refreshes: [trpc.dlq], success: () => "Webhook deleted." });

  const submit = async (event: FormEvent<HTMLFormElement>, rotate: boolean) => {
    event.preventDefault();
    const data = new FormData(event.currentTarget);
    setError(null);
    try {
      await save.runAsync({
        url: String(data.get("url") ?? "").trim(),
        tenant_id: String(data.get("tenant") ?? ""),
        enabled: data.get("enabled") === "on",
        rotate_secret: rotate,
      });
    } catch (e) {
      setError(errorMessage(e));
    }
  };
  return (
    <section className="panel" aria-labelledby="webhook-title">
      <h2 id="webhook-title">Alert webhook</h2>
      <p className="small muted">
        Firing and resolved alerts are POSTed as <code>webhook.deliver</code> jobs (their own retries and DLQ apply), signed with HMAC-SHA256 (Standard Webhooks
        headers <code>webhook-id</code>, <code>webhook-timestamp</code>, <code>webhook-signature</code>).
      </p>
      {secret ? (
        <div className="panel secret" role="status" data-testid="webhook-secret">
          <strong>Signing secret (shown once):</strong> <code className="mono break">{secret}</code> <CopyId id={secret} label="signing secret" />
        </div>
      ) : null}
      <QueryView query={webhook} loadingLabel="Loading the webhook…">
        {(w) => (
          <form
            className="config-form"
            key={w?.updated_at ?? "none"}
            onSubmit={(e) => {
              const rotate = (e.nativeEvent as SubmitEvent).submitter?.getAttribute("value") === "rotate";
              void submit(e, rotate);
            }}
            noValidate
          >
            {w ? (
              <p className="small">
                {w.enabled ? <Tag tone="ok">enabled</Tag> : <Tag>disabled</Tag>} signing secret <code data-testid="secret-hint">{w.secret_hint}</code> · updated{" "}
                {dateTime(w.updated_at)}
              </p>
            ) : (
              <p className="small muted">No webhook yet: alerts show in the console only.</p>
            )}
            <div className="field">
              <label htmlFor="webhook-url">URL (https://)</label>
              <input
                id="webhook-url"
                name="url"
                type="url"
                defaultValue={w?.url ?? ""}
                required
                placeholder="https://hooks.example.com/porter"
                autoComplete="off"
              />
            </div>
            <div className="field">
              <label htmlFor="webhook-tenant">Tenant of the delivery jobs</label>
              <select id="webhook-tenant" name="tenant" defaultValue={w?.tenant_id ?? ""} required>
                <option value="" disabled>
                  choose a tenant
                </option>
                {(tenants.data ?? []).map((t) => (
                  <option key={t.id} value={t.id}>
                    {t.id}
                  </option>
                ))}
              </select>
            </div>
            <label className="check">
              <input type="checkbox" name="enabled" defaultChecked={w?.enabled ?? true} /> Enabled
            </label>
            <FormError message={error} />
            <div className="actions">
              <button type="submit" className="button primary" value="save" disabled={save.isPending}>
                {w ? "Save webhook" : "Create webhook"}
              </button>
              {w ? (
                <>
                  <button type="submit" className="button" value="rotate" disabled={save.isPending}>
                    Save and rotate the secret
                  </button>
                  <button
                    type="button"
                    className="button danger"
                    onClick={() =>
                      remove.confirm({
                        title: "Delete the alert webhook?",
                        summary: "Alerts stop being delivered; they still show in the console.",
                        confirmLabel: "Delete the webhook",
                        reason: "optional",
                        isDestructive: true,
                        input: () => ({}),
                      })
                    }
                  >
                    Delete
                  </button>
                </>
              ) : null}
            </div>
          </form>
        )}
      </QueryView>
    </section>
  );
}
