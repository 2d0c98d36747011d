"use client";
import { ZWebhookCreate } from "@porter/api/schemas/webhooks";
import { WEBHOOK_EVENTS, type WebhookEvent } from "@porter/contracts";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { Tag } from "../../../../components/badges";
import { JobIdCell } from "../../../../components/copy-id";
import { CursorPager, useCursorPages } from "../../../../components/cursor-pages";
import { type Column, DataTable } from "../../../../components/data-table";
import { FormError } from "../../../../components/form-error";
import { useViewer } from "../../../../components/providers";
import { Empty, errorMessage } from "../../../../components/states";
import { useAction } from "../../../../components/use-action";
import { dateTime } from "../../../../lib/format";
import { type RouterOutputs, useTRPC } from "../../../../lib/trpc";

type Webhook = RouterOutputs["webhooks"]["list"][number];
type Delivery = RouterOutputs["webhooks"]["deliveries"]["items"][number];

/** A secret shown once (created or rotated), with copy. */
function SecretOnce({ title, secret, note, onDone }: { title: string; secret: string; note: string; onDone: () => void }) {
  return (
    <section className="panel secret" aria-label="New webhook secret">
      <h3>{title}</h3>
      <p>{note}</p>
      <div className="secret-row">
        <input readOnly value={secret} aria-label="The webhook secret" data-testid="new-webhook-secret" onFocus={(e) => e.target.select()} />
        <button type="button" className="button" onClick={() => void navigator.clipboard?.writeText(secret)}>
          Copy
        </button>
        <button type="button" className="button" onClick={onDone}>
          Done
        </button>
      </div>
    </section>
  );
}

/**
 * The tenant page's Webhooks section (issue 13): endpoints that receive a signed POST when one of
 * the tenant's jobs reaches a subscribed terminal state. Operators add (the secret is shown once),
 * enable/disable, rotate (confirmed; the new secret once) and delete (confirmed); everyone sees
 * each endpoint's delivery log.
 */
export function TenantWebhooksSection({ tenantId }: { tenantId: string }) {
  const trpc = useTRPC();
  const viewer = useViewer();
  const isOperator = viewer.can("operator");
  const webhooks = useQuery(trpc.webhooks.list.queryOptions({ tenant_id: tenantId }));
  const refreshes = [trpc.webhooks];
  const [secret, setSecret] = useState<{ title: string; secret: string; note: string } | null>(null);
  const [logOf, setLogOf] = useState<string | null>(null);
  const update = useAction(trpc.webhooks.update.mutationOptions(), {
    refreshes,
    success: (r) => `Webhook ${r.id} ${r.enabled ? "enabled" : "disabled"}.`,
  });
  const rotate = useAction(trpc.webhooks.rotateSecret.mutationOptions(), {
    refreshes,
    success: (r) => `Rotated the secret of ${r.id}.`,
    onDone: (r) =>
      setSecret({
        title: `New secret of ${r.id} — copy it now`,
        secret: r.secret,
        note: r.previous_secret_expires_at
          ? `This is the only time it is shown. Until ${dateTime(r.previous_secret_expires_at)} deliveries are signed with the old secret too.`
          : "This is the only time it is shown. The old secret no longer signs.",
      }),
  });
  const remove = useAction(trpc.webhooks.delete.mutationOptions(), {
    refreshes,
    success: (r) => `Deleted webhook ${r.id}.`,
    onDone: (r) => setLogOf((id) => (id === r.id ? null : id)),
  });

  const columns: ReadonlyArray<Column<Webhook>> = [
    { header: "Endpoint", className: "mono", cell: (w) => w.id },
    { header: "URL", isWrapping: true, cell: (w) => <span className="mono">{w.url}</span> },
    { header: "Events", cell: (w) => w.events.join(", ") },
    { header: "Description", isWrapping: true, cell: (w) => w.description ?? "—" },
    {
      header: "Secret",
      cell: (w) => (
        <span
          className="mono"
          title={w.previous_secret_expires_at ? `the previous secret signs too until ${dateTime(w.previous_secret_expires_at)}` : undefined}
        >
          {w.secret_hint}
          {w.previous_secret_expires_at ? " (+ previous)" : ""}
        </span>
      ),
    },
    {
      header: "Status",
      cell: (w) => <span title={`added ${dateTime(w.created_at)}`}>{w.enabled ? <Tag tone="ok">enabled</Tag> : <Tag tone="warn">disabled</Tag>}</span>,
    },
  ];

  return (
    <>
      <h2>Webhooks</h2>
      <p className="muted">
        Each endpoint receives a signed POST (Standard Webhooks) when one of this tenant's jobs succeeds, dies, is cancelled or expires — the events it
        subscribes to. Failed deliveries are retried; a delivery that keeps failing dies into the dead letters like any job.
      </p>
      {secret ? <SecretOnce {...secret} onDone={() => setSecret(null)} /> : null}
      {isOperator && !secret ? (
        <AddWebhookForm
          tenantId={tenantId}
          onCreated={(w) =>
            setSecret({ title: `Webhook ${w.id} added — copy its secret now`, secret: w.secret, note: "This is the only time the signing secret is shown." })
          }
        />
      ) : null}
      <DataTable
        query={webhooks}
        columns={columns}
        rowKey={(w) => w.id}
        caption="Webhook endpoints"
        loadingLabel="Loading webhooks…"
        rowLabel={(w) => `webhook ${w.id}`}
        rowActions={(w) => (
          <span className="row-actions">
            <button type="button" className="button small" onClick={() => setLogOf(logOf === w.id ? null : w.id)} aria-label={`Deliveries of ${w.id}`}>
              {logOf === w.id ? "Hide deliveries" : "Deliveries"}
            </button>
            {isOperator ? (
              <>
                <button
                  type="button"
                  className="button small"
                  onClick={() => update.run({ id: w.id, enabled: !w.enabled })}
                  aria-label={`${w.enabled ? "Disable" : "Enable"} ${w.id}`}
                >
                  {w.enabled ? "Disable" : "Enable"}
                </button>
                <button
                  type="button"
                  className="button small"
                  aria-label={`Rotate the secret of ${w.id}`}
                  onClick={() =>
                    rotate.confirm({
                      title: "Rotate webhook secret",
                      summary: (
                        <p>
                          Give <code>{w.id}</code> a new signing secret? For the next 24 hours deliveries carry two signatures (old and new), so the receiver
                          can switch at any time within it. The new secret is shown once.
                        </p>
                      ),
                      confirmLabel: "Rotate secret",
                      reason: "optional",
                      input: () => ({ id: w.id }),
                    })
                  }
                >
                  Rotate
                </button>
                <button
                  type="button"
                  className="button small danger"
                  aria-label={`Delete ${w.id}`}
                  onClick={() =>
                    remove.confirm({
                      title: "Delete webhook",
                      summary: (
                        <p>
                          Delete <code>{w.id}</code> ({w.url})? Nothing more is sent to it; deliveries in flight fail. This cannot be undone.
                        </p>
                      ),
                      confirmLabel: "Delete webhook",
                      reason: "optional",
                      isDestructive: true,
                      input: () => ({ id: w.id }),
                    })
                  }
                >
                  Delete
                </button>
              </>
            ) : null}
          </span>
        )}
        empty={<Empty title="No webhooks yet">{isOperator ? "Add one above." : "An operator can add one."}</Empty>}
      />
      {logOf ? <DeliveryLog endpointId={logOf} /> : null}
    </>
  );
}

const DELIVERY_COLUMNS: ReadonlyArray<Column<Delivery>> = [
  { header: "Time", cell: (d) => <span title={dateTime(d.at)}>{dateTime(d.at)}</span> },
  { header: "Event", cell: (d) => d.event_type },
  { header: "Job", cell: (d) => (d.subject_job_id ? <JobIdCell jobId={d.subject_job_id} testId="delivery-subject" /> : "—") },
  { header: "Attempt", isNumeric: true, cell: (d) => String(d.attempt) },
  {
    header: "Status",
    cell: (d) =>
      d.status_code === null ? (
        <Tag tone="bad">no answer</Tag>
      ) : (
        <Tag tone={d.status_code < 300 ? "ok" : d.status_code >= 500 ? "bad" : "warn"}>{d.status_code}</Tag>
      ),
  },
  { header: "Duration", isNumeric: true, cell: (d) => `${d.duration_ms} ms` },
  { header: "Error", isWrapping: true, cell: (d) => d.error ?? "—" },
];

/** One endpoint's delivery attempts, newest first, by cursor. */
function DeliveryLog({ endpointId }: { endpointId: string }) {
  const trpc = useTRPC();
  const pages = useCursorPages();
  const query = useQuery({
    ...trpc.webhooks.deliveries.queryOptions({ id: endpointId, limit: 25, ...(pages.cursor ? { cursor: pages.cursor } : {}) }),
    placeholderData: keepPreviousData,
    refetchInterval: 5000,
  });
  return (
    <section className="panel" aria-label={`Deliveries of ${endpointId}`}>
      <h3>Deliveries of {endpointId}</h3>
      <DataTable
        query={{ ...query, data: query.data?.items }}
        columns={DELIVERY_COLUMNS}
        rowKey={(d) => d.id}
        caption={`Deliveries of ${endpointId}`}
        loadingLabel="Loading deliveries…"
        empty={<Empty title="No deliveries yet">A delivery is logged per attempt once a subscribed event happens (kept 14 days).</Empty>}
      />
      <CursorPager pages={pages} nextCursor={query.data?.next_cursor} shown={query.data?.items.length ?? 0} label="Pages of deliveries" />
    </section>
  );
}

/** URL, events (checkboxes), description; validated with ZWebhookCreate, the SSRF guard's 400 shown as the form's error. */
function AddWebhookForm({ tenantId, onCreated }: { tenantId: string; onCreated: (w: RouterOutputs["webhooks"]["create"]) => void }) {
  const trpc = useTRPC();
  const create = useAction(trpc.webhooks.create.mutationOptions(), { refreshes: [trpc.webhooks], success: (r) => `Added webhook ${r.id}.`, onDone: onCreated });
  const [url, setUrl] = useState("");
  const [events, setEvents] = useState<WebhookEvent[]>(["succeeded", "dead"]);
  const [description, setDescription] = useState("");
  const [formError, setFormError] = useState<string | null>(null);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const parsed = ZWebhookCreate.safeParse({ tenant_id: tenantId, url, events, ...(description.trim() ? { description } : {}) });
    if (!parsed.success) {
      setFormError(parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; "));
      return;
    }
    setFormError(null);
    try {
      await create.runAsync(parsed.data);
      setUrl("");
      setDescription("");
    } catch (error) {
      setFormError(errorMessage(error));
    }
  };

  return (
    <section className="panel" aria-label="Add a webhook">
      <form className="config-form" onSubmit={submit} noValidate>
        <div className="fields">
          <div className="field">
            <label htmlFor="webhook-url">URL (https)</label>
            <input id="webhook-url" type="url" value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://example.com/hooks/porter" />
          </div>
          <fieldset className="field">
            <legend>Events</legend>
            {WEBHOOK_EVENTS.map((e) => (
              <label key={e} className="check">
                <input
                  type="checkbox"
                  checked={events.includes(e)}
                  onChange={(ev) => setEvents((cur) => (ev.target.checked ? [...cur, e] : cur.filter((x) => x !== e)))}
                />{" "}
                {e}
              </label>
            ))}
          </fieldset>
          <div className="field">
            <label htmlFor="webhook-description">Description</label>
            <input id="webhook-description" value={description} onChange={(e) => setDescription(e.target.value)} placeholder="optional" />
          </div>
        </div>
        <FormError message={formError} />
        <div className="actions">
          <button type="submit" className="button primary" disabled={create.isPending}>
            {create.isPending ? "Adding…" : "Add webhook"}
          </button>
        </div>
      </form>
    </section>
  );
}
