import { pretty } from "../../../../lib/format";
import type { RouterOutputs } from "../../../../lib/trpc";

type JobProgress = NonNullable<RouterOutputs["jobs"]["get"]["progress"]>;

/**
 * A running attempt's last progress (`ctx.progress`, written with the worker's heartbeat, so up to
 * a second or a heartbeat behind): a bar when it reported a fraction, and its step and message.
 */
export function ProgressBar({ progress }: { progress: JobProgress | null | undefined }) {
  if (!progress || (progress.fraction === undefined && !progress.message && !progress.step)) {
    return <span className="muted">not reported</span>;
  }
  const percent = progress.fraction === undefined ? null : Math.round(progress.fraction * 100);
  const text = [progress.step, progress.message].filter(Boolean).join(" · ");
  return (
    <div className="job-progress" data-testid="job-progress">
      {percent === null ? null : (
        <>
          <progress value={progress.fraction} max={1} aria-label={`Progress${text ? `: ${text}` : ""}`}>
            {percent}%
          </progress>
          <span className="job-progress-percent">{percent}%</span>
        </>
      )}
      {text ? <span className="job-progress-text break">{text}</span> : null}
    </div>
  );
}

/** The job's last durable checkpoint (`ctx.checkpoint`), collapsed: what the next attempt resumes from. */
export function CheckpointPanel({ checkpoint }: { checkpoint: unknown }) {
  return (
    <section className="panel" aria-labelledby="checkpoint-title">
      <h2 id="checkpoint-title">Last checkpoint</h2>
      {checkpoint === null || checkpoint === undefined ? (
        <p className="muted">None: the handler has not checkpointed.</p>
      ) : (
        <details className="checkpoint" data-testid="job-checkpoint">
          <summary>
            The next attempt resumes from this <span className="muted">({JSON.stringify(checkpoint).length} bytes of JSON)</span>
          </summary>
          <pre className="json">{pretty(checkpoint)}</pre>
        </details>
      )}
    </section>
  );
}
