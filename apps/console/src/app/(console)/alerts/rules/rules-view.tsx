"use client";
import { ALERT_KINDS } from "@porter/api/schemas/dlq";
import { useQuery } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { Tag } from "../../../../components/badges";
import { type Column, DataTable } from "../../../../components/data-table";
import { FormError } from "../../../../components/form-error";
import { Page } from "../../../../components/page";
import { useViewer } from "../../../../components/providers";
import { Empty, errorMessage } from "../../../../components/states";
import { useAction } from "../../../../components/use-action";
import { type RouterInputs, type RouterOutputs, useTRPC } from "../../../../lib/trpc";
import { KIND_LABELS } from "../alerts-view";
import { AlertTabs } from "../tabs";
import { WebhookSection } from "./webhook-section";

type Rule = RouterOutputs["dlq"]["alerts"]["rules"]["rules"][number];

/** What a rule's threshold means, per kind. */
const THRESHOLD_HELP: Record<Rule["kind"], string> = {
  deaths_5m: "deaths in 5 minutes above this fire",
  unowned_age: "seconds an unowned dead job may wait",
  group_reopened: "window in seconds after a reopen",
};

export function RulesView() {
  const trpc = useTRPC();
  const viewer = useViewer();
  const isAdmin = viewer.can("admin");
  const rules = useQuery(trpc.dlq.alerts.rules.queryOptions({}));
  const queues = useQuery(trpc.queues.list.queryOptions());
  const [editing, setEditing] = useState<Rule | null>(null);
  const save = useAction(trpc.dlq.alerts.saveRule.mutationOptions(), {
    refreshes: [trpc.dlq],
    success: (r) => `Rule ${r.id} saved.`,
    onDone: () => setEditing(null),
  });
  const remove = useAction(trpc.dlq.alerts.deleteRule.mutationOptions(), { refreshes: [trpc.dlq], success: (r) => `Rule ${r.id} deleted.` });
  const columns: ReadonlyArray<Column<Rule>> = [
    { header: "Rule", cell: (r) => KIND_LABELS[r.kind] },
    { header: "Queue", cell: (r) => r.queue_id ?? "every queue" },
    { header: "Threshold", isNumeric: true, cell: (r) => <span title={THRESHOLD_HELP[r.kind]}>{r.threshold}</span> },
    { header: "Enabled", cell: (r) => (r.enabled ? <Tag tone="ok">enabled</Tag> : <Tag>disabled</Tag>) },
  ];
  return (
    <Page
      title="Alerts"
      description="Rules on dead jobs, per queue or for every queue, evaluated by the maintenance leader; firing and resolved alerts go to the webhook."
    >
      <AlertTabs />
      <section aria-labelledby="rules-title">
        <h2 id="rules-title">Rules</h2>
        <DataTable
          query={{ ...rules, data: rules.data?.rules }}
          columns={columns}
          rowKey={(r) => r.id}
          caption="Alert rules"
          loadingLabel="Loading alert rules…"
          empty={<Empty title="No alert rules">{isAdmin ? "Add one below." : "An admin adds them."}</Empty>}
          {...(isAdmin
            ? {
                rowLabel: (r: Rule) => `rule ${r.id}`,
                rowActions: (r: Rule) => (
                  <>
                    <button type="button" className="button small" onClick={() => setEditing(r)}>
                      Edit
                    </button>
                    <button
                      type="button"
                      className="button small danger"
                      onClick={() =>
                        remove.confirm({
                          title: `Delete rule ${r.id}?`,
                          summary: `${KIND_LABELS[r.kind]} on ${r.queue_id ?? "every queue"} stops being evaluated.`,
                          confirmLabel: "Delete the rule",
                          reason: "optional",
                          isDestructive: true,
                          input: () => ({ id: r.id }),
                        })
                      }
                    >
                      Delete
                    </button>
                  </>
                ),
              }
            : {})}
        />
      </section>
      {isAdmin ? (
        <RuleForm
          key={editing?.id ?? "new"}
          editing={editing}
          queues={(queues.data ?? []).map((q) => q.id)}
          onSave={save.runAsync}
          onCancel={() => setEditing(null)}
        />
      ) : null}
      {isAdmin ? <WebhookSection /> : <p className="muted small">The alert webhook is configured by an admin.</p>}
    </Page>
  );
}

type RuleInput = RouterInputs["dlq"]["alerts"]["saveRule"];

function RuleForm({
  editing,
  queues,
  onSave,
  onCancel,
}: {
  editing: Rule | null;
  queues: string[];
  onSave: (input: RuleInput) => Promise<unknown>;
  onCancel: () => void;
}) {
  const [kind, setKind] = useState<Rule["kind"]>(editing?.kind ?? "deaths_5m");
  const [error, setError] = useState<string | null>(null);
  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const data = new FormData(event.currentTarget);
    const threshold = Number(data.get("threshold"));
    if (!Number.isFinite(threshold) || threshold < 0) return setError("Threshold: a number, 0 or more.");
    setError(null);
    try {
      await onSave({
        ...(editing ? { id: editing.id } : {}),
        kind,
        queue_id: String(data.get("queue") ?? "") || null,
        threshold,
        enabled: data.get("enabled") === "on",
      });
    } catch (e) {
      setError(errorMessage(e));
    }
  };
  return (
    <section className="panel" aria-labelledby="rule-form-title">
      <h2 id="rule-form-title">{editing ? `Edit rule ${editing.id}` : "Add a rule"}</h2>
      <form className="config-form" onSubmit={(e) => void submit(e)} noValidate>
        <div className="field">
          <label htmlFor="rule-kind">Fires when</label>
          <select id="rule-kind" value={kind} onChange={(e) => setKind(e.target.value as Rule["kind"])}>
            {ALERT_KINDS.map((k) => (
              <option key={k} value={k}>
                {KIND_LABELS[k]}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="rule-queue">Queue</label>
          <select id="rule-queue" name="queue" defaultValue={editing?.queue_id ?? ""}>
            <option value="">every queue</option>
            {queues.map((q) => (
              <option key={q} value={q}>
                {q}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="rule-threshold">Threshold ({THRESHOLD_HELP[kind]})</label>
          <input id="rule-threshold" name="threshold" type="number" min={0} step="any" defaultValue={editing?.threshold ?? 10} required />
        </div>
        <label className="check">
          <input type="checkbox" name="enabled" defaultChecked={editing?.enabled ?? true} /> Enabled
        </label>
        <FormError message={error} />
        <div className="actions">
          <button type="submit" className="button primary">
            {editing ? "Save rule" : "Add rule"}
          </button>
          {editing ? (
            <button type="button" className="button" onClick={onCancel}>
              Cancel
            </button>
          ) : null}
        </div>
      </form>
    </section>
  );
}
