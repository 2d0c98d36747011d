"use client";
import { createContext, type FormEvent, Fragment, type ReactNode, useContext, useEffect, useRef, useState } from "react";
import { Dialog } from "./dialog";
import { FormError } from "./form-error";
import { errorMessage } from "./states";

/** What the person confirming chose: the reason, the dialog's checkboxes, and whether this is the dry run. */
export type ConfirmValues = { reason: string; isDryRun: boolean; options: Readonly<Record<string, boolean>> };

/**
 * What a confirmation dialog asks before an action runs (`useAction().confirm`). With `dryRun`, the
 * procedure is first called with `isDryRun` (it counts and changes nothing), the answer is shown, and
 * confirming waits for it.
 */
export type Confirmation<TOutput> = {
  title: string;
  /** What will happen, in numbers where there are some ("12 ready jobs stop being claimed"). */
  summary: ReactNode;
  /** What the dry run found, once it answered. */
  dryRun?: (answer: TOutput) => ReactNode;
  /** Whether the dry run left anything to do (default: yes). */
  canConfirm?: (answer: TOutput) => boolean;
  /** The confirm button's text, e.g. "Pause queue diag"; given the dry run's answer when there is one. */
  confirmLabel: string | ((answer: TOutput | undefined) => string);
  /** The reason goes to the audit log; "required" (default) refuses to run without one. */
  reason?: "required" | "optional";
  /** Checkboxes that change what the action does (and ask the dry run again), e.g. force. */
  options?: ReadonlyArray<{ name: string; label: string }>;
  /** The button that closes without acting (default "Cancel"). */
  dismissLabel?: string;
  /** An action that cannot be undone (revoke): the confirm button says so by its colour too. */
  isDestructive?: boolean;
};

/**
 * The console's confirmation step for a consequential action: a dialog that says what will happen
 * (with a dry run's count where the procedure has one) and asks for a reason kept in the audit log.
 * The reason field has focus, Enter confirms, Escape or Cancel closes without changing anything; a
 * refusal stays in the dialog.
 */
function ConfirmDialog<TOutput>({
  spec,
  call,
  run,
  onClosed,
}: {
  spec: Confirmation<TOutput>;
  /** The procedure alone (the dry run). */
  call: (values: ConfirmValues) => Promise<TOutput>;
  /** The action: the procedure, then the refreshes and the flash message. */
  run: (values: ConfirmValues) => Promise<unknown>;
  onClosed: () => void;
}) {
  const [isOpen, setOpen] = useState(true);
  const [reason, setReason] = useState("");
  const [reasonError, setReasonError] = useState<string | null>(null);
  const [options, setOptions] = useState<Record<string, boolean>>({});
  const hasDryRun = spec.dryRun !== undefined;
  /** The options the dry run is (or was last) asked with; null without a dry run. */
  const [asked, setAsked] = useState<Record<string, boolean> | null>(hasDryRun ? {} : null);
  const [answer, setAnswer] = useState<TOutput | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const [isRunning, setRunning] = useState(false);
  const reasonRef = useRef<HTMLInputElement>(null);
  const isRequired = (spec.reason ?? "required") === "required";
  const isAsking = asked !== null && answer === undefined && error === null;
  const isReady = !hasDryRun || (answer !== undefined && (spec.canConfirm?.(answer) ?? true));

  // Runs after the Dialog child's effect has opened it (child effects first), so focus can land.
  useEffect(() => reasonRef.current?.focus(), []);

  // The dry run, again whenever an option changes; an answer to an older question is dropped.
  useEffect(() => {
    if (!asked) return;
    let isCurrent = true;
    call({ reason: "", isDryRun: true, options: asked }).then(
      (found) => isCurrent && setAnswer(found),
      (e: unknown) => isCurrent && setError(errorMessage(e)),
    );
    return () => {
      isCurrent = false;
    };
  }, [asked, call]);

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (isRunning || isAsking || !isReady) return;
    const why = reason.trim();
    if (isRequired && !why) {
      setReasonError("Give a reason: it is kept in the audit log.");
      reasonRef.current?.focus();
      return;
    }
    setReasonError(null);
    setError(null);
    setRunning(true);
    try {
      await run({ reason: why, isDryRun: false, options });
      setOpen(false);
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setRunning(false);
    }
  };

  const label = typeof spec.confirmLabel === "function" ? spec.confirmLabel(answer) : spec.confirmLabel;
  return (
    <Dialog open={isOpen} title={spec.title} onClose={onClosed} canClose={!isRunning}>
      <form className="confirm" onSubmit={(e) => void submit(e)} noValidate>
        <div role="status" data-testid="confirm-summary">
          {spec.summary}
        </div>
        {isAsking ? <p role="status">Counting (dry run)…</p> : null}
        {spec.dryRun && answer !== undefined ? spec.dryRun(answer) : null}
        <FormError message={error} />
        {(spec.options ?? []).map((o) => (
          <label key={o.name} className="check">
            <input
              type="checkbox"
              checked={options[o.name] === true}
              disabled={isRunning || isAsking}
              onChange={(e) => {
                const chosen = { ...options, [o.name]: e.target.checked };
                setOptions(chosen);
                if (hasDryRun) {
                  setAnswer(undefined);
                  setError(null);
                  setAsked(chosen);
                }
              }}
            />
            {/* No space text before the label (.check spaces it): its text is the option's name as written, "Force: …". */}
            {o.label}
          </label>
        ))}
        <div className={`field${reasonError ? " has-error" : ""}`}>
          <label htmlFor="confirm-reason">{isRequired ? "Reason (required, kept in the audit log)" : "Reason (kept in the audit log)"}</label>
          <input
            id="confirm-reason"
            ref={reasonRef}
            value={reason}
            maxLength={500}
            autoComplete="off"
            placeholder={isRequired ? undefined : "optional"}
            onChange={(e) => setReason(e.target.value)}
            aria-invalid={reasonError ? true : undefined}
            aria-describedby={reasonError ? "confirm-error" : undefined}
          />
          {reasonError ? (
            <small id="confirm-error" className="field-error" role="alert">
              {reasonError}
            </small>
          ) : null}
        </div>
        <div className="actions">
          <button type="submit" className={`button ${spec.isDestructive ? "danger" : "primary"}`} disabled={isRunning || isAsking || !isReady}>
            {isRunning ? "Working…" : label}
          </button>
          <button type="button" className="button" onClick={() => setOpen(false)} disabled={isRunning}>
            {spec.dismissLabel ?? "Cancel"}
          </button>
        </div>
      </form>
    </Dialog>
  );
}

type Open = (render: (close: () => void) => ReactNode) => void;
const ConfirmContext = createContext<Open | null>(null);

/** Where the one confirmation dialog of the console renders (in `Providers`). */
export function ConfirmHost({ children }: { children: ReactNode }) {
  const [dialog, setDialog] = useState<{ key: number; node: ReactNode } | null>(null);
  const opened = useRef(0);
  const open: Open = (render) => {
    const key = ++opened.current;
    // Only the dialog that is still showing may clear the host (a newer one may have replaced it).
    setDialog({ key, node: render(() => setDialog((d) => (d?.key === key ? null : d))) });
  };
  return (
    <ConfirmContext.Provider value={open}>
      {children}
      {dialog ? <Fragment key={dialog.key}>{dialog.node}</Fragment> : null}
    </ConfirmContext.Provider>
  );
}

/**
 * Opens a confirmation dialog: `confirmWith(spec, call, run)`; `useAction().confirm` is the way views
 * use it.
 */
export const useConfirm = () => {
  const open = useContext(ConfirmContext);
  if (!open) throw new Error("useConfirm outside <ConfirmHost>");
  return <TOutput,>(spec: Confirmation<TOutput>, call: (values: ConfirmValues) => Promise<TOutput>, run: (values: ConfirmValues) => Promise<unknown>) =>
    open((close) => <ConfirmDialog spec={spec} call={call} run={run} onClosed={close} />);
};
