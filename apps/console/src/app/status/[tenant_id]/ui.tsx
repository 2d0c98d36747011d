import type { SafeFailure, TJobProgress } from "@porter/contracts";

// Server-rendered pieces of the tenant status pages. No console components: the page should look
// like the tenant's product (its name, its accent), not like Porter's console.

/** "2026-12-01 20:41:07 UTC" (no locale or clock of the viewer's: the page renders on the server). */
export const Time = ({ at }: { at: string | null }) =>
  at ? <time dateTime={at}>{`${at.slice(0, 10)} ${at.slice(11, 19)} UTC`}</time> : <span className="st-muted">—</span>;

export const stateLabel = (state: string) => state.toLowerCase().replace("_", " ");

export const StateBadge = ({ state }: { state: string }) => (
  <span className={`st-badge st-${state.toLowerCase()}`} data-role="state">
    {stateLabel(state)}
  </span>
);

/** A progress bar: fraction (if reported), step and message. */
export const ProgressBar = ({ progress }: { progress: TJobProgress | null }) => {
  const pct = progress?.fraction === undefined ? null : Math.round(progress.fraction * 100);
  const text = [progress?.step, progress?.message].filter(Boolean).join(" · ");
  return (
    <div className="st-progress" data-role="progress">
      <div
        className="st-bar"
        role="progressbar"
        aria-label="Progress"
        aria-valuemin={0}
        aria-valuemax={100}
        {...(pct === null ? {} : { "aria-valuenow": pct })}
        data-fraction={progress?.fraction ?? ""}
      >
        <div className={`st-fill${pct === null ? " st-indeterminate" : ""}`} style={{ width: `${pct ?? 100}%` }} />
      </div>
      <span className="st-progress-text">
        {pct === null ? "" : `${pct}%`}
        {text ? `${pct === null ? "" : " · "}${text}` : pct === null ? "running" : ""}
      </span>
    </div>
  );
};

export const Failure = ({ failure }: { failure: SafeFailure | null }) =>
  failure ? (
    <p className="st-failure" data-role="failure">
      {failure.code ? <code>{failure.code}</code> : null} {failure.message || "failed"}
    </p>
  ) : null;
