"use client";
import { type RouterInputs, type RouterOutputs, useTRPC } from "../lib/trpc";
import type { Confirmation, ConfirmValues } from "./confirm-action";
import { useAction } from "./use-action";

export type JobAction = "cancel" | "retry" | "redrive";
type JobSelection = RouterInputs["jobs"]["cancel"]["selection"];
type BulkResult = RouterOutputs["jobs"]["cancel"];

const VERB: Record<JobAction, { title: string; button: string; done: string; eligible: string }> = {
  cancel: { title: "Cancel jobs", button: "Cancel jobs", done: "Cancelled (or asked to stop)", eligible: "queued or running" },
  retry: { title: "Retry now", button: "Retry now", done: "Retrying now", eligible: "waiting for a retry" },
  redrive: { title: "Redrive dead jobs", button: "Redrive", done: "Redriven", eligible: "dead" },
};

const FORCE = { name: "force", label: "Force: also redrive permanent errors, partially completed jobs and jobs past their deadline" };

const plural = (n: number, word: string) => `${n.toLocaleString("en-US")} ${word}${n === 1 ? "" : "s"}`;

/** What the dry run found: how many jobs the action takes, and what it skips and why. */
function DryRun({ action, answer }: { action: JobAction; answer: BulkResult }) {
  return (
    <div role="status" data-testid="dry-run">
      {answer.eligible === 0 ? (
        <p>No job here is {VERB[action].eligible}: nothing to do.</p>
      ) : (
        <p>
          Dry run: <strong>{plural(answer.eligible, "job")}</strong> will be affected.
          {answer.capped
            ? ` (${answer.total.toLocaleString("en-US")} match; this run takes the oldest ${answer.eligible.toLocaleString("en-US")} — run it again for the rest.)`
            : ""}
        </p>
      )}
      {Object.keys(answer.skipped).length ? (
        <ul className="skipped">
          {Object.entries(answer.skipped).map(([why, n]) => (
            <li key={why}>
              {plural(n, "job")} skipped: {why}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

/**
 * The job actions (cancel, retry now, redrive) on one job or a selection, with the console's two
 * steps: a dry run that counts what would change (and what is skipped, and why), then the
 * confirmation with an optional reason (kept in the audit log); redrive can be forced.
 * `start(action, selection, label)` opens it; `onDone` runs after it changed something.
 */
export function useJobActions(onDone?: () => void) {
  const trpc = useTRPC();
  const around = (action: JobAction) => ({
    refreshes: [trpc.jobs, trpc.overview],
    success: (r: BulkResult) => {
      const skipped = Object.values(r.skipped).reduce((a, b) => a + b, 0);
      return `${VERB[action].done}: ${plural(r.applied, "job")}${skipped ? `; ${skipped} skipped` : ""}.`;
    },
    ...(onDone ? { onDone } : {}),
  });
  const cancel = useAction(trpc.jobs.cancel.mutationOptions(), around("cancel"));
  const retry = useAction(trpc.jobs.retry.mutationOptions(), around("retry"));
  const redrive = useAction(trpc.jobs.redrive.mutationOptions(), around("redrive"));

  const start = (action: JobAction, selection: JobSelection, label: string) => {
    const spec: Confirmation<BulkResult> = {
      title: VERB[action].title,
      summary: (
        <p>
          <strong>{label}</strong>
        </p>
      ),
      dryRun: (answer) => <DryRun action={action} answer={answer} />,
      canConfirm: (answer) => answer.eligible > 0,
      confirmLabel: (answer) => `Confirm: ${VERB[action].button}${answer ? ` ${plural(answer.eligible, "job")}` : ""}`,
      reason: "optional",
      dismissLabel: "Close",
    };
    const input = ({ reason, isDryRun }: ConfirmValues) => ({ selection, dry_run: isDryRun, ...(reason ? { reason } : {}) });
    if (action === "cancel") cancel.confirm({ ...spec, input });
    else if (action === "retry") retry.confirm({ ...spec, input });
    else redrive.confirm({ ...spec, options: [FORCE], input: (values) => ({ ...input(values), force: values.options.force === true }) });
  };
  return { start };
}
