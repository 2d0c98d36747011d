"use client";
import { DEFAULT_REDRIVE_RATE, SKIP_REASONS, type TGroupDetail } from "@porter/api/schemas/dlq";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { usePathname, useRouter, useSearchParams } from "next/navigation";
import { type FormEvent, useEffect, useState } from "react";
import { Dialog } from "../../../../components/dialog";
import { RedriveProgress, RedriveStatus, SKIP_LABELS } from "../../../../components/dlq";
import { FormError } from "../../../../components/form-error";
import { useViewer } from "../../../../components/providers";
import { errorMessage } from "../../../../components/states";
import { useAction } from "../../../../components/use-action";
import { count, duration } from "../../../../lib/format";
import { type RouterOutputs, useTRPC } from "../../../../lib/trpc";

type Preview = RouterOutputs["dlq"]["redrives"]["preview"];

/**
 * The group's redrive: a dry run first (eligible, and skipped by reason: nothing changes), then a
 * velocity (jobs/s), force (with its warning) and a reason, a confirmation dialog, and the live
 * progress of the redrive it started (polled every second; abortable). The running redrive's id
 * is kept in the address (`?redrive=`), so a reload keeps watching it.
 */
export function RedrivePanel({ group }: { group: TGroupDetail }) {
  const trpc = useTRPC();
  const viewer = useViewer();
  const router = useRouter();
  const pathname = usePathname();
  const searchParams = useSearchParams();
  // The redrive to watch: the one in the address (started here, or linked), else one of this
  // group's that is running now (started by someone else, or before a reload).
  const running = useQuery({ ...trpc.dlq.redrives.list.queryOptions({ status: "running", limit: 50 }), refetchInterval: 5_000 });
  const runningHere = running.data?.redrives.find((r) => (r.selection as { group_id?: string }).group_id === group.id)?.redrive_id;
  // Kept once seen, so its 100% stays on screen after it leaves the running list.
  const [seen, setSeen] = useState<string | null>(null);
  useEffect(() => {
    if (runningHere) setSeen(runningHere);
  }, [runningHere]);
  const redriveId = searchParams.get("redrive") ?? runningHere ?? seen;
  const canRedrive = viewer.can("operator");
  const queryClient = useQueryClient();
  const [rate, setRate] = useState(String(DEFAULT_REDRIVE_RATE));
  const [isForced, setForced] = useState(false);
  const [reason, setReason] = useState("");
  const [preview, setPreview] = useState<Preview | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [isConfirming, setConfirming] = useState(false);
  const dryRun = useMutation(trpc.dlq.redrives.preview.mutationOptions());
  const create = useMutation(trpc.dlq.redrives.create.mutationOptions());
  const selection = { group_id: group.id };

  const runDryRun = async (force = isForced) => {
    setError(null);
    setPreview(null);
    try {
      setPreview(await dryRun.mutateAsync({ selection, force }));
    } catch (e) {
      setError(errorMessage(e));
    }
  };
  const ratePerS = Number(rate);
  const isRateValid = Number.isFinite(ratePerS) && ratePerS >= 0.1 && ratePerS <= 10_000;

  const onSubmit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (!preview) return void runDryRun();
    if (!isRateValid) return setError("Velocity: jobs per second, from 0.1 to 10,000.");
    if (preview.eligible === 0) return setError("The dry run found nothing to redrive.");
    setError(null);
    setConfirming(true);
  };
  const start = async () => {
    try {
      const made = await create.mutateAsync({ selection, force: isForced, rate_per_s: ratePerS, ...(reason.trim() ? { reason: reason.trim() } : {}) });
      setConfirming(false);
      setPreview(null);
      await queryClient.invalidateQueries({ queryKey: trpc.dlq.pathKey() });
      const next = new URLSearchParams(searchParams.toString());
      next.set("redrive", made.redrive_id);
      router.replace(`${pathname}?${next.toString()}`, { scroll: false });
    } catch (e) {
      setError(errorMessage(e));
      setConfirming(false);
    }
  };

  return (
    <section className="panel" aria-labelledby="redrive-title">
      <h2 id="redrive-title">Redrive</h2>
      {redriveId ? <LiveRedrive id={redriveId} /> : null}
      {canRedrive ? (
        <form className="config-form redrive-form" onSubmit={onSubmit} aria-label="Redrive this group" noValidate>
          <p className="small muted">
            Moves this group's dead jobs (those dead now, frozen at the moment you ask) back to READY at the velocity you choose. The dry run changes nothing.
          </p>
          <div className="field">
            <label htmlFor="redrive-rate">Velocity (jobs per second)</label>
            <input
              id="redrive-rate"
              type="number"
              min={0.1}
              max={10_000}
              step="any"
              value={rate}
              onChange={(e) => setRate(e.target.value)}
              className="narrow"
            />
          </div>
          <label className="check">
            <input
              type="checkbox"
              checked={isForced}
              onChange={(e) => {
                setForced(e.target.checked);
                if (preview) void runDryRun(e.target.checked);
              }}
            />{" "}
            Force: also redrive permanent errors, partially completed jobs and jobs past their deadline
          </label>
          {isForced ? (
            <p className="flash flash-bad small" role="alert">
              Forcing runs jobs again that recorded external effects (they may repeat them), that failed for a reason no retry fixes, or whose deadline passed
              (it is cleared). Check the dry run's counts first.
            </p>
          ) : null}
          <div className="field">
            <label htmlFor="redrive-reason">Reason (kept in the audit log)</label>
            <input id="redrive-reason" value={reason} onChange={(e) => setReason(e.target.value)} maxLength={500} autoComplete="off" />
          </div>
          {preview ? <Breakdown preview={preview} /> : null}
          <FormError message={error} />
          <div className="actions">
            <button type="button" className="button" onClick={() => void runDryRun()} disabled={dryRun.isPending}>
              {dryRun.isPending ? "Counting…" : preview ? "Dry run again" : "Dry run"}
            </button>
            {preview ? (
              <button type="submit" className="button primary" disabled={preview.eligible === 0 || !isRateValid}>
                Redrive {count(preview.eligible)} job{preview.eligible === 1 ? "" : "s"}…
              </button>
            ) : null}
          </div>
        </form>
      ) : (
        <p className="muted small">Operators redrive; you can watch redrives under Dead letters → Redrives.</p>
      )}
      <Dialog open={isConfirming} title="Redrive this group?" onClose={() => setConfirming(false)} canClose={!create.isPending}>
        <form
          className="confirm"
          onSubmit={(e) => {
            e.preventDefault();
            void start();
          }}
        >
          <p role="status" data-testid="redrive-confirm-summary">
            {count(preview?.eligible ?? 0)} dead job{preview?.eligible === 1 ? "" : "s"} of group {group.id} go back to READY at {rate} per second (about{" "}
            {duration(((preview?.eligible ?? 0) / (ratePerS || 1)) * 1000)}){isForced ? ", forced" : ""}. Jobs that stop being eligible meanwhile are skipped.
          </p>
          <div className="actions">
            {/* biome-ignore lint/a11y/noAutofocus: the dialog's one decision; focus lands on it as a confirmation's reason field does */}
            <button type="submit" className="button primary" disabled={create.isPending} autoFocus>
              {create.isPending ? "Starting…" : `Start the redrive`}
            </button>
            <button type="button" className="button" onClick={() => setConfirming(false)} disabled={create.isPending}>
              Cancel
            </button>
          </div>
        </form>
      </Dialog>
    </section>
  );
}

/** The dry run's answer: eligible, and skipped by reason. */
function Breakdown({ preview }: { preview: Preview }) {
  const skipped = SKIP_REASONS.filter((r) => preview.skipped[r] > 0);
  return (
    <div className="dry-run" role="status" data-testid="dry-run">
      <p>
        <strong data-testid="dry-run-eligible">{count(preview.eligible)}</strong> eligible
        {skipped.length ? "; skipped:" : ", none skipped."}
      </p>
      {skipped.length ? (
        <ul className="skipped">
          {skipped.map((r) => (
            <li key={r}>
              {count(preview.skipped[r])} — {SKIP_LABELS[r]}
            </li>
          ))}
        </ul>
      ) : null}
      <p className="muted small">Frozen at {new Date(preview.cutoff).toLocaleString()}: jobs that die later are not included.</p>
    </div>
  );
}

/** A redrive's live progress, polled every second while it runs, with Abort (confirmed). */
export function LiveRedrive({ id }: { id: string }) {
  const trpc = useTRPC();
  const viewer = useViewer();
  const redrive = useQuery({
    ...trpc.dlq.redrives.get.queryOptions({ id }),
    refetchInterval: (q) => (q.state.data && q.state.data.status !== "running" ? false : 1_000),
  });
  const abort = useAction(trpc.dlq.redrives.abort.mutationOptions(), {
    refreshes: [trpc.dlq],
    success: (r) => `Redrive aborted: ${count(r.redriven)} of ${count(r.total)} were redriven.`,
  });
  if (redrive.isPending) return <p className="muted">Loading the redrive…</p>;
  if (redrive.error)
    return (
      <p className="form-error">
        Redrive {id}: {errorMessage(redrive.error)}
      </p>
    );
  const r = redrive.data;
  return (
    <div className="live-redrive" aria-live="polite">
      <p>
        Redrive <code title={r.redrive_id}>{r.redrive_id.slice(-12)}</code> <RedriveStatus status={r.status} /> by {r.actor}
        {r.force ? " (forced)" : ""}
      </p>
      <RedriveProgress redrive={r} />
      {r.status === "running" && viewer.can("operator") ? (
        <button
          type="button"
          className="button danger small"
          onClick={() =>
            abort.confirm({
              title: "Abort this redrive?",
              summary: `${count(r.redriven)} of ${count(r.total)} jobs are back already; the rest stay dead (within one batch).`,
              confirmLabel: "Abort the redrive",
              reason: "optional",
              isDestructive: true,
              input: ({ reason }) => ({ id: r.redrive_id, ...(reason ? { reason } : {}) }),
            })
          }
        >
          Abort
        </button>
      ) : null}
    </div>
  );
}
