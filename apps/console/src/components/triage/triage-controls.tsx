"use client";
import { DLQ_STATUSES, type TDlqStatus } from "@porter/api/schemas/dlq";
import { useQuery } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { useTRPC } from "../../lib/trpc";
import { statusLabel } from "../dlq";
import { FormError } from "../form-error";
import { useViewer } from "../providers";
import { errorMessage } from "../states";
import { type TriageChange, type TriageTarget, triageView, useTriage } from "./use-triage";

/** `2026-12-01T18:00` (a datetime-local input's value) from an instant. */
const toLocalInput = (d: Date) => {
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
};

/**
 * Owner, status (a group: ignored until a date or until N more deaths) and reason code of a failure
 * group or of a single dead job: one form, one call with what changed. Viewers see the values;
 * operators change them. The group page and the job page share it.
 */
export function TriageControls({ target }: { target: TriageTarget }) {
  const trpc = useTRPC();
  const view = triageView(target);
  const canIgnoreBy = target.kind === "group";
  const viewer = useViewer();
  const canTriage = viewer.can("operator");
  const codes = useQuery(trpc.dlq.reasonCodes.list.queryOptions({}));
  const users = useQuery({ ...trpc.users.list.queryOptions(), enabled: viewer.can("admin") });
  const [status, setStatus] = useState<TDlqStatus>(view.status);
  const [ignoreBy, setIgnoreBy] = useState<"until" | "more">("until");
  const [error, setError] = useState<string | null>(null);
  const triage = useTriage(target);
  const run = async (input: TriageChange) => {
    setError(null);
    try {
      await triage.runAsync(input);
    } catch (e) {
      setError(errorMessage(e));
    }
  };

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const data = new FormData(event.currentTarget);
    const text = (name: string) => String(data.get(name) ?? "").trim();
    const input: TriageChange = {};
    const owner = text("owner");
    if (owner !== (view.owner?.email ?? "")) input.owner = owner || null;
    const reason = text("reason");
    if (reason !== (view.reason_code ?? "")) input.reason_code = reason || null;
    if (status !== view.status || (status === "ignored" && canIgnoreBy)) {
      input.status = status;
      if (status === "ignored" && canIgnoreBy) {
        if (ignoreBy === "until") {
          const until = text("ignore_until");
          if (!until || Number.isNaN(Date.parse(until))) return setError("Ignore until when? Pick a date and time.");
          input.ignore = { until: new Date(until).toISOString() };
        } else {
          const more = Number(text("ignore_more"));
          if (!Number.isInteger(more) || more < 1) return setError("Ignore until how many more deaths? A whole number, at least 1.");
          input.ignore = { more };
        }
      }
    }
    if (Object.keys(input).length === 0) return setError("Nothing changed.");
    void run(input);
  };

  const activeCodes = (codes.data?.codes ?? []).filter((c) => !c.archived || c.code === view.reason_code);
  const isOwner = view.owner?.email.toLowerCase() === viewer.email.toLowerCase();
  return (
    <section className="panel" aria-labelledby="triage-title">
      <div className="panel-head">
        <h2 id="triage-title">Triage</h2>
        {canTriage && !isOwner ? (
          <button type="button" className="button small" onClick={() => void run({ owner: "me" })} disabled={triage.isPending}>
            Assign to me
          </button>
        ) : null}
      </div>
      <p className="small" data-testid={`${view.noun}-owner`}>
        Owner: {view.owner ? <strong>{view.owner.email}</strong> : <span className="muted">nobody</span>}
        {view.status === "ignored" ? (
          <>
            {" "}
            · ignored {view.ignored_until ? `until ${new Date(view.ignored_until).toLocaleString()}` : ""}
            {view.ignore_remaining !== null ? `until ${view.ignore_remaining} more` : ""}
          </>
        ) : null}
      </p>
      <form
        className="config-form triage-form"
        onSubmit={submit}
        aria-label={`Triage this ${view.noun}`}
        key={`${view.owner?.email}|${view.status}|${view.reason_code}`}
        noValidate
      >
        <fieldset disabled={!canTriage || triage.isPending} className="plain">
          <div className="field">
            <label htmlFor="triage-owner">Owner (a console user's e-mail; empty to unassign)</label>
            <input id="triage-owner" name="owner" type="email" list="triage-users" defaultValue={view.owner?.email ?? ""} autoComplete="off" />
            <datalist id="triage-users">
              {(users.data ?? []).map((u) => (
                <option key={u.email} value={u.email} />
              ))}
            </datalist>
          </div>
          <div className="field">
            <label htmlFor="triage-status">Status</label>
            <select id="triage-status" name="status" value={status} onChange={(e) => setStatus(e.target.value as TDlqStatus)}>
              {DLQ_STATUSES.map((s) => (
                <option key={s} value={s}>
                  {statusLabel(s)}
                </option>
              ))}
            </select>
          </div>
          {status === "ignored" && canIgnoreBy ? (
            <fieldset className="field">
              <legend>Ignore</legend>
              <label className="check">
                <input type="radio" name="ignore_by" checked={ignoreBy === "until"} onChange={() => setIgnoreBy("until")} /> until
                <input
                  type="datetime-local"
                  name="ignore_until"
                  aria-label="Ignore until"
                  defaultValue={toLocalInput(new Date(Date.now() + 86_400_000))}
                  onFocus={() => setIgnoreBy("until")}
                />
              </label>
              <label className="check">
                <input type="radio" name="ignore_by" checked={ignoreBy === "more"} onChange={() => setIgnoreBy("more")} /> until
                <input
                  type="number"
                  name="ignore_more"
                  min={1}
                  defaultValue={100}
                  aria-label="more deaths"
                  className="narrow"
                  onFocus={() => setIgnoreBy("more")}
                />{" "}
                more deaths
              </label>
            </fieldset>
          ) : null}
          <div className="field">
            <label htmlFor="triage-reason">Reason code</label>
            <select id="triage-reason" name="reason" defaultValue={view.reason_code ?? ""}>
              <option value="">none</option>
              {activeCodes.map((c) => (
                <option key={c.code} value={c.code} title={c.description}>
                  {c.label} ({c.code})
                </option>
              ))}
            </select>
          </div>
          <FormError message={error} />
          {canTriage ? (
            <div className="actions">
              <button type="submit" className="button primary">
                {triage.isPending ? "Saving…" : "Save triage"}
              </button>
            </div>
          ) : (
            <p className="muted small">Operators triage; you can read.</p>
          )}
        </fieldset>
      </form>
    </section>
  );
}
