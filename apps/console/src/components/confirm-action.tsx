"use client";
import { useEffect, useRef, useState, type FormEvent, type ReactNode } from "react";
import { Dialog } from "./dialog";
import { errorMessage } from "./states";

/** What a confirmation dialog asks: its title, what the action will do, and the action itself. */
export type ConfirmRequest = {
  title: string;
  /** What will happen, in numbers where there are some ("12 ready jobs stop being claimed"). */
  summary: ReactNode;
  /** The confirm button's text, e.g. "Pause queue diag". */
  confirmLabel: string;
  /** Runs the action with the reason given; returns the notice shown afterwards. */
  run: (reason: string) => Promise<string>;
};

/**
 * A consequential one-object action (pause, drain, a role change) with the console's confirmation
 * step, as `useJobAction` does for jobs: a dialog that says what will happen and asks for a reason,
 * which is required and goes to the audit log. The reason field has focus, Enter confirms,
 * Escape or Cancel closes without changing anything. `start(request)` opens it; `element` renders
 * the dialog; `notice` the outcome.
 */
export function useConfirmedAction() {
  const [request, setRequest] = useState<ConfirmRequest | null>(null);
  const [reason, setReason] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [isBusy, setBusy] = useState(false);
  const [notice, setNotice] = useState<{ tone: "ok" | "bad"; text: string } | null>(null);
  const reasonRef = useRef<HTMLInputElement>(null);

  // Runs after the dialog's own effect has opened it (child effects first), so focus can land.
  useEffect(() => {
    if (request) reasonRef.current?.focus();
  }, [request]);

  const start = (next: ConfirmRequest) => {
    setReason("");
    setError(null);
    setNotice(null);
    setRequest(next);
  };
  const close = () => {
    if (!isBusy) setRequest(null);
  };

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (!request || isBusy) return;
    const why = reason.trim();
    if (!why) {
      setError("Give a reason: it is kept in the audit log.");
      reasonRef.current?.focus();
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const text = await request.run(why);
      setNotice({ tone: "ok", text });
      setRequest(null);
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(false);
    }
  };

  const element = (
    <Dialog open={request !== null} title={request?.title ?? ""} onClose={close}>
      {request ? (
        <form className="confirm" onSubmit={(e) => void submit(e)} noValidate>
          <div role="status" data-testid="confirm-summary">
            {request.summary}
          </div>
          <div className={`field${error ? " has-error" : ""}`}>
            <label htmlFor="confirm-reason">Reason (required, kept in the audit log)</label>
            <input
              id="confirm-reason"
              ref={reasonRef}
              value={reason}
              maxLength={500}
              autoComplete="off"
              onChange={(e) => setReason(e.target.value)}
              aria-invalid={error ? true : undefined}
              aria-describedby={error ? "confirm-error" : undefined}
            />
            {error ? (
              <small id="confirm-error" className="field-error" role="alert">
                {error}
              </small>
            ) : null}
          </div>
          <div className="actions">
            <button type="submit" className="button primary" disabled={isBusy}>
              {isBusy ? "Working…" : request.confirmLabel}
            </button>
            <button type="button" className="button" onClick={close} disabled={isBusy}>
              Cancel
            </button>
          </div>
        </form>
      ) : null}
    </Dialog>
  );
  return { start, element, notice, clearNotice: () => setNotice(null) };
}
