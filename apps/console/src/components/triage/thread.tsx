"use client";
import type { TGroupDetail } from "@porter/api/schemas/dlq";
import { type FormEvent, type KeyboardEvent, useState } from "react";
import { ago, dateTime } from "../../lib/format";
import { useViewer } from "../providers";
import { errorMessage } from "../states";
import { type TriageTarget, triageView, useTriage } from "./use-triage";

type DlqEvent = TGroupDetail["events"][number];

/** What a triage change was, when the event has no sentence of its own: "new → investigating". */
const describe = (e: DlqEvent): string => {
  const data = e.data ?? {};
  if ("from" in data || "to" in data) return `${String(data.from ?? "—")} → ${String(data.to ?? "—")}`;
  return Object.entries(data)
    .map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : String(v)}`)
    .join(" · ");
};

/**
 * A group's (or a single dead job's own) thread, oldest first: notes and triage changes with
 * author and time, and the note form. The group page and the job page share it.
 */
export function Thread({ target, title = "Thread" }: { target: TriageTarget; title?: string }) {
  const viewer = useViewer();
  const view = triageView(target);
  const [note, setNote] = useState("");
  const [error, setError] = useState<string | null>(null);
  const addNote = useTriage(target, { success: () => "Note added.", onDone: () => setNote("") });
  const submit = async (event?: FormEvent<HTMLFormElement>) => {
    event?.preventDefault();
    const text = note.trim();
    if (!text) {
      setError("Write a note first.");
      return;
    }
    setError(null);
    try {
      await addNote.runAsync({ note: text });
    } catch (e) {
      setError(errorMessage(e));
    }
  };
  // Enter sends the note (as chat boxes do); Shift+Enter starts a new line.
  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      void submit();
    }
  };
  return (
    <section className="panel" aria-labelledby="thread-title">
      <h2 id="thread-title">{title}</h2>
      {view.events.length === 0 ? (
        <p className="muted">No notes or changes yet.</p>
      ) : (
        <ol className="timeline dlq-thread" aria-label="Notes and changes, oldest first" data-testid={`${view.noun}-thread`}>
          {view.events.map((e) => (
            <li
              key={e.id}
              className={`tl ${e.kind === "note" ? "tl-info" : e.kind === "reopened" ? "tl-bad" : ""}`}
              data-testid="thread-event"
              data-kind={e.kind}
            >
              <span className="muted small" title={dateTime(e.at)}>
                {ago(e.at)}
              </span>
              <div className="tl-body">
                <span className="tl-title">
                  <strong>{e.actor}</strong> {e.kind === "note" ? "wrote" : e.kind.replaceAll("_", " ")}
                  {e.job_id && view.noun === "group" ? (
                    <>
                      {" "}
                      on job <a href={`/jobs/${e.job_id}`}>{e.job_id.slice(-12)}</a>
                    </>
                  ) : null}
                </span>
                {e.kind === "note" ? <p className="note-body">{e.body}</p> : <span className="tl-detail small">{e.body ?? describe(e)}</span>}
              </div>
            </li>
          ))}
        </ol>
      )}
      {viewer.can("operator") ? (
        <form className="note-form" onSubmit={(e) => void submit(e)} noValidate>
          <div className={`field${error ? " has-error" : ""}`}>
            <label htmlFor="note">Add a note (Enter sends, Shift+Enter for a new line)</label>
            <textarea
              id="note"
              rows={3}
              maxLength={5000}
              value={note}
              onChange={(e) => setNote(e.target.value)}
              onKeyDown={onKeyDown}
              aria-invalid={error ? true : undefined}
              aria-describedby={error ? "note-error" : undefined}
            />
            {error ? (
              <small id="note-error" className="field-error" role="alert">
                {error}
              </small>
            ) : null}
          </div>
          <div className="actions">
            <button type="submit" className="button primary" disabled={addNote.isPending}>
              {addNote.isPending ? "Adding…" : "Add note"}
            </button>
          </div>
        </form>
      ) : (
        <p className="muted small">Operators add notes; you can read the thread.</p>
      )}
    </section>
  );
}
