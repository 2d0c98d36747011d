"use client";
import { Tag } from "../../../../components/badges";
import { dateTime, dateTimeMs, duration } from "../../../../lib/format";
import type { RouterOutputs } from "../../../../lib/trpc";

type Event = RouterOutputs["jobs"]["get"]["timeline"][number];

const TONE: Record<string, "ok" | "bad" | "warn" | "info" | "neutral"> = {
  enqueued: "info",
  claimed: "info",
  heartbeat: "neutral",
  succeeded: "ok",
  attempt_failed: "bad",
  attempt_timed_out: "bad",
  attempt_cancelled: "warn",
  lease_expired: "warn",
  retry_scheduled: "neutral",
  handed_back: "neutral",
  dead: "bad",
  cancel_requested: "warn",
  cancelled: "warn",
  expired: "warn",
  redriven: "info",
  retry_now: "info",
};

/** A heartbeat silence longer than this before an attempt ended is called out as a gap. */
const GAP_MS = 10_000;

const errorText = (error: unknown): string => {
  if (!error || typeof error !== "object") return "";
  const e = error as { code?: unknown; message?: unknown; class?: unknown };
  return `${String(e.code ?? "")}${e.class ? ` (${String(e.class)})` : ""}: ${String(e.message ?? "")}`;
};

/** What happened, in one sentence per event, with who did it and the details that matter. */
const describe = (e: Event): { title: string; detail?: string; flags: string[] } => {
  const d = e.data ?? {};
  const reason = typeof d.reason === "string" && d.reason ? ` — “${d.reason}”` : "";
  const flags: string[] = [];
  const lastBeat = typeof d.last_heartbeat_at === "string" ? new Date(d.last_heartbeat_at).getTime() : null;
  const silence = lastBeat !== null ? new Date(e.at).getTime() - lastBeat : null;
  if (silence !== null && silence > GAP_MS) flags.push(`no heartbeat for ${duration(silence)} before this`);
  const took = typeof d.duration_ms === "number" ? ` after ${duration(d.duration_ms)}` : "";
  switch (e.kind) {
    case "enqueued":
      return { title: "Enqueued", flags };
    case "claimed":
      return {
        title: `Claimed by ${e.actor ?? "a worker"}`,
        detail: typeof d.lease_until === "string" ? `lease until ${dateTime(d.lease_until)}` : undefined,
        flags,
      };
    case "heartbeat":
      return { title: `Last heartbeat from ${e.actor ?? "the worker"}`, flags };
    case "succeeded":
      return { title: `Succeeded${took}`, flags };
    case "attempt_failed":
      return { title: `Attempt ${e.attempt ?? ""} failed${took}`, detail: errorText(d.error), flags };
    case "attempt_timed_out":
      return { title: `Attempt ${e.attempt ?? ""} timed out${took}`, detail: errorText(d.error), flags };
    case "attempt_cancelled":
      return { title: `Attempt ${e.attempt ?? ""} stopped on cancel${took}`, flags };
    case "lease_expired":
      return {
        title: `Lease expired: ${e.actor ?? "the worker"} went silent; the job was reclaimed`,
        detail: errorText(d.error) || undefined,
        flags: [...flags, ...(d.possible_duplicate ? ["possible duplicate execution"] : [])],
      };
    case "retry_scheduled":
      return { title: `Retry scheduled for ${typeof d.run_at === "string" ? dateTime(d.run_at) : "later"}`, flags };
    case "handed_back":
      return { title: `Handed back by ${e.actor ?? "a draining worker"} (attempt not counted)`, flags };
    case "dead":
      return { title: "Dead", detail: errorText(d.error) || undefined, flags };
    case "cancel_requested":
      return { title: `Cancel requested by ${e.actor ?? "someone"}${reason}`, flags };
    case "cancelled":
      return { title: `Cancelled${e.actor ? ` by ${e.actor}` : ""}${reason}`, flags };
    case "expired":
      return { title: "Expired: its deadline passed", flags };
    case "redriven": {
      // The lineage (durable redrives, issue 12): which redrive, how many attempts the dead life had.
      const lineage = [
        typeof d.redrive_id === "string" ? `redrive ${d.redrive_id}` : null,
        typeof d.attempts_before === "number" ? `after ${d.attempts_before} attempt${d.attempts_before === 1 ? "" : "s"}` : null,
        typeof d.group_id === "string" ? `failure group ${d.group_id}` : null,
        d.forced ? "forced" : null,
      ].filter(Boolean);
      return { title: `Redriven by ${e.actor ?? "someone"}${reason}`, detail: lineage.length ? lineage.join(" · ") : undefined, flags };
    }
    case "retry_now":
      return { title: `Retried now by ${e.actor ?? "someone"}${reason}`, flags };
    default:
      return { title: `${e.kind}${e.actor ? ` by ${e.actor}` : ""}`, detail: Object.keys(d).length ? JSON.stringify(d) : undefined, flags };
  }
};

/** The job's event history, oldest first. */
export function Timeline({ events }: { events: Event[] }) {
  if (events.length === 0) return <p className="muted">No events.</p>;
  // A redrive restarts the attempt count: events after one say so, like the attempts table's runs.
  let redrives = 0;
  const after = events.map((e) => (e.kind === "redriven" ? ++redrives : redrives));
  // Events have no id: each is keyed by what it is, numbered only when the same one recurs, so a
  // row keeps its key when an earlier row moves (the running attempt's last heartbeat does).
  const seen = new Map<string, number>();
  const keys = events.map((e) => {
    const key = `${e.at}-${e.kind}-${e.attempt ?? ""}-${e.actor ?? ""}`;
    const n = seen.get(key) ?? 0;
    seen.set(key, n + 1);
    return n === 0 ? key : `${key}-${n}`;
  });
  return (
    <ol className="timeline">
      {events.map((e, i) => {
        const { title, detail, flags } = describe(e);
        const life = e.attempt !== null && e.kind !== "redriven" && after[i] ? <span className="muted"> · after redrive {after[i]}</span> : null;
        return (
          <li key={keys[i]} className={`tl tl-${TONE[e.kind] ?? "neutral"}`} data-kind={e.kind}>
            <time dateTime={e.at}>{dateTimeMs(e.at)}</time>
            <div className="tl-body">
              <span className="tl-title">
                {title}
                {e.attempt !== null && !["attempt_failed", "attempt_timed_out", "attempt_cancelled"].includes(e.kind) ? (
                  <span className="muted"> · attempt {e.attempt}</span>
                ) : null}
                {life}
              </span>
              {detail ? <span className="tl-detail">{detail}</span> : null}
              {flags.map((f) => (
                <Tag key={f} tone="warn">
                  ⚠ {f}
                </Tag>
              ))}
            </div>
          </li>
        );
      })}
    </ol>
  );
}
