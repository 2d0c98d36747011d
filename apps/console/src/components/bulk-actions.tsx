"use client";
import type { TJobSelection } from "@porter/api/schemas/jobs";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "../lib/trpc";
import { Dialog } from "./dialog";
import { errorMessage } from "./states";

export type JobAction = "cancel" | "retry" | "redrive";

type BulkResult = { dry_run: boolean; eligible: number; total: number; capped: boolean; applied: number; skipped: Record<string, number> };

const VERB: Record<JobAction, { title: string; button: string; done: string; eligible: string }> = {
  cancel: { title: "Cancel jobs", button: "Cancel jobs", done: "Cancelled (or asked to stop)", eligible: "queued or running" },
  retry: { title: "Retry now", button: "Retry now", done: "Retrying now", eligible: "waiting for a retry" },
  redrive: { title: "Redrive dead jobs", button: "Redrive", done: "Redriven", eligible: "dead" },
};

const plural = (n: number, word: string) => `${n.toLocaleString("en-US")} ${word}${n === 1 ? "" : "s"}`;

/**
 * A job action with the console's two steps: a dry run that counts what would change (and what is
 * skipped, and why), then a confirmation dialog with an optional reason (kept in the audit log).
 * `start(action, selection, label)` opens it; `element` renders the dialog; `notice` the outcome.
 */
export function useJobAction(onDone?: () => void) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const cancel = useMutation(trpc.jobs.cancel.mutationOptions());
  const retry = useMutation(trpc.jobs.retry.mutationOptions());
  const redrive = useMutation(trpc.jobs.redrive.mutationOptions());
  const [pending, setPending] = useState<{ action: JobAction; selection: TJobSelection; label: string; preview: BulkResult | null; error: string | null } | null>(null);
  const [reason, setReason] = useState("");
  const [isForced, setForced] = useState(false);
  const [isBusy, setBusy] = useState(false);
  const [notice, setNotice] = useState<{ tone: "ok" | "bad"; text: string } | null>(null);

  const run = (action: JobAction, selection: TJobSelection, dryRun: boolean, force: boolean, why: string): Promise<BulkResult> => {
    const input = { selection, dry_run: dryRun, ...(why.trim() ? { reason: why.trim() } : {}) };
    if (action === "cancel") return cancel.mutateAsync(input);
    if (action === "retry") return retry.mutateAsync(input);
    return redrive.mutateAsync({ ...input, force });
  };

  const preview = async (action: JobAction, selection: TJobSelection, label: string, force: boolean) => {
    setBusy(true);
    setPending({ action, selection, label, preview: null, error: null });
    try {
      const result = await run(action, selection, true, force, "");
      setPending({ action, selection, label, preview: result, error: null });
    } catch (error) {
      setPending({ action, selection, label, preview: null, error: errorMessage(error) });
    } finally {
      setBusy(false);
    }
  };

  const start = (action: JobAction, selection: TJobSelection, label: string) => {
    setReason("");
    setForced(false);
    setNotice(null);
    void preview(action, selection, label, false);
  };

  const confirm = async () => {
    if (!pending) return;
    setBusy(true);
    try {
      const result = await run(pending.action, pending.selection, false, isForced, reason);
      const skipped = Object.values(result.skipped).reduce((a, b) => a + b, 0);
      setNotice({ tone: "ok", text: `${VERB[pending.action].done}: ${plural(result.applied, "job")}${skipped ? `; ${skipped} skipped` : ""}.` });
      setPending(null);
      await queryClient.invalidateQueries({ queryKey: trpc.jobs.pathKey() });
      await queryClient.invalidateQueries({ queryKey: trpc.overview.pathKey() });
      onDone?.();
    } catch (error) {
      setPending({ ...pending, error: errorMessage(error) });
    } finally {
      setBusy(false);
    }
  };

  const p = pending?.preview;
  const element = (
    <Dialog open={pending !== null} title={pending ? VERB[pending.action].title : ""} onClose={() => setPending(null)}>
      {pending ? (
        <div className="confirm">
          <p>
            <strong>{pending.label}</strong>
          </p>
          {!p && !pending.error ? <p role="status">Counting (dry run)…</p> : null}
          {p ? (
            <div role="status" data-testid="dry-run">
              {p.eligible === 0 ? (
                <p>No job here is {VERB[pending.action].eligible}: nothing to do.</p>
              ) : (
                <p>
                  Dry run: <strong>{plural(p.eligible, "job")}</strong> will be affected.
                  {p.capped ? ` (${p.total.toLocaleString("en-US")} match; this run takes the oldest ${p.eligible.toLocaleString("en-US")} — run it again for the rest.)` : ""}
                </p>
              )}
              {Object.keys(p.skipped).length ? (
                <ul className="skipped">
                  {Object.entries(p.skipped).map(([why, n]) => (
                    <li key={why}>
                      {plural(n, "job")} skipped: {why}
                    </li>
                  ))}
                </ul>
              ) : null}
            </div>
          ) : null}
          {pending.error ? (
            <p className="form-error" role="alert">
              {pending.error}
            </p>
          ) : null}
          {pending.action === "redrive" ? (
            <label className="check">
              <input
                type="checkbox"
                checked={isForced}
                disabled={isBusy}
                onChange={(e) => {
                  setForced(e.target.checked);
                  void preview(pending.action, pending.selection, pending.label, e.target.checked);
                }}
              />{" "}
              Force: also redrive partially completed jobs and jobs past their deadline
            </label>
          ) : null}
          <div className="field">
            <label htmlFor="action-reason">Reason (kept in the audit log)</label>
            <input id="action-reason" value={reason} maxLength={500} onChange={(e) => setReason(e.target.value)} placeholder="optional" />
          </div>
          <div className="actions">
            <button type="button" className="button primary" onClick={() => void confirm()} disabled={isBusy || !p || p.eligible === 0}>
              {isBusy && p ? "Working…" : `Confirm: ${VERB[pending.action].button}${p ? ` ${plural(p.eligible, "job")}` : ""}`}
            </button>
            <button type="button" className="button" onClick={() => setPending(null)} disabled={isBusy && Boolean(p)}>
              Close
            </button>
          </div>
        </div>
      ) : null}
    </Dialog>
  );
  return { start, element, notice, clearNotice: () => setNotice(null) };
}
