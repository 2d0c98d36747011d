/**
 * What the runtime tells an observer as it works: plain synchronous calls with counts it already
 * has in hand (no clock reads beyond the claim's own timing, no allocation beyond the call, never a database round trip). The
 * worker's Prometheus registry (metrics/worker-metrics.ts) implements it; without one the runtime
 * calls {@link NOOP_PROBE}.
 */
export type WorkerProbe = {
  /** A claim statement returned `rows` jobs (0 for an empty claim) after `seconds` (the round trip, as the worker waited for it). */
  onClaim: (rows: number, seconds: number) => void;
  /** The completer wrote one batch of `rows` acks or failures (one statement). */
  onWrite: (kind: "ack" | "fail", rows: number) => void;
  /** One batched lease extension: `leases` extended or lost together. */
  onHeartbeat: (leases: number) => void;
  /** A handler's attempt ended with this outcome (buffered for the completer). */
  onOutcome: (jobType: string, outcome: AttemptOutcome) => void;
};

/** How an attempt ended, as the worker decided it: succeeded, or the failure's next state. */
export type AttemptOutcome = "succeeded" | "retry" | "dead" | "cancelled" | "expired";

/** A probe that records nothing. */
export const NOOP_PROBE: WorkerProbe = {
  onClaim: () => undefined,
  onWrite: () => undefined,
  onHeartbeat: () => undefined,
  onOutcome: () => undefined,
};

/** The outcome label of a failure whose next state is `state`. */
export const failureOutcome = (state: string): AttemptOutcome =>
  state === "RETRY_WAIT" ? "retry" : state === "DEAD" ? "dead" : state === "CANCELLED" ? "cancelled" : "expired";
