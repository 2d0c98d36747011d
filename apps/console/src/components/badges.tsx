import type { TJobState } from "@porter/contracts";

/** A job state as a coloured badge (text always present: colour is never the only signal). */
export function StateBadge({ state }: { state: TJobState | string }) {
  return <span className={`badge state-${state.toLowerCase()}`}>{state}</span>;
}

/** Small neutral or coloured label. */
export function Tag({ children, tone = "neutral", title }: { children: React.ReactNode; tone?: "neutral" | "warn" | "bad" | "ok" | "info"; title?: string }) {
  return (
    <span className={`tag tag-${tone}`} title={title}>
      {children}
    </span>
  );
}
