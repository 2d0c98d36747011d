"use client";
import type { TDlqStatus, TRedrive } from "@porter/api/schemas/dlq";
import { count, duration } from "../lib/format";
import { Tag } from "./badges";

const STATUS_TONE: Record<TDlqStatus, "neutral" | "warn" | "bad" | "ok" | "info"> = {
  new: "bad",
  investigating: "warn",
  fix_pending: "info",
  resolved: "ok",
  ignored: "neutral",
};

/** `fix_pending` → `fix pending`. */
export const statusLabel = (status: string): string => status.replaceAll("_", " ");

/** A failure group's triage status as a badge, with the regression flag when it reopened. */
export function DlqStatusBadge({ status, isRegression }: { status: TDlqStatus; isRegression?: boolean }) {
  return (
    <span className="badge-row">
      <Tag tone={STATUS_TONE[status]}>{statusLabel(status)}</Tag>
      {isRegression ? (
        <Tag tone="bad" title="It was resolved or ignored, then a new job died into it">
          regression
        </Tag>
      ) : null}
    </span>
  );
}

/** A redrive's progress: a native <progress> (read by screen readers) and done of total, skipped, ETA. */
export function RedriveProgress({ redrive }: { redrive: TRedrive }) {
  const skipped = Object.values(redrive.skipped).reduce((a, b) => a + b, 0);
  const done = redrive.redriven + skipped;
  const percent = Math.round(redrive.progress * 100);
  return (
    <div className="redrive-progress" data-testid="redrive-progress">
      <progress max={1} value={redrive.progress} aria-label={`Redrive progress: ${percent}%`} />
      <span className="muted small">
        <strong data-testid="redrive-percent">{percent}%</strong> · {count(done)} of {count(redrive.total)} done ({count(redrive.redriven)} redriven
        {skipped ? `, ${count(skipped)} skipped` : ""})
        {redrive.status === "running" ? ` · ${redrive.eta_s === null ? "ETA —" : `ETA ${duration(redrive.eta_s * 1000)}`} at ${redrive.rate_per_s}/s` : ""}
      </span>
    </div>
  );
}

/** A redrive's status as a tag. */
export function RedriveStatus({ status }: { status: TRedrive["status"] }) {
  return <Tag tone={status === "running" ? "info" : status === "completed" ? "ok" : "warn"}>{status}</Tag>;
}

/** Skip reasons as an operator reads them. */
export const SKIP_LABELS: Record<keyof TRedrive["skipped"], string> = {
  expired: "deadline passed",
  partial: "recorded effects (partially completed)",
  permanent: "permanent error (needs force)",
  over_quota: "tenant over its backlog quota",
  already: "already redriven or no longer dead",
};

/** A message shortened to `max` characters, the whole of it on demand (a real button). */
export function LongText({ text, max = 120, label = "message" }: { text: string; max?: number; label?: string }) {
  if (text.length <= max) return <span className="long-text">{text}</span>;
  return (
    <details className="long-text">
      <summary>
        <span>{text.slice(0, max).trimEnd()}…</span> <span className="small link-like">show full {label}</span>
      </summary>
      <pre className="whole-text">{text}</pre>
    </details>
  );
}
