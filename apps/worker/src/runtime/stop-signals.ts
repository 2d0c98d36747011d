/**
 * A signal repeated within this window of the first is the same stop delivered twice, not a
 * second request: `kill -- -PGID` (systemd's default KillMode) reaches the worker directly and
 * through npm, which relays it to its child, a few milliseconds apart.
 */
export const REPEATED_SIGNAL_WINDOW_MS = 1_000;

/** What a stop signal means: start the drain, nothing (a repeat of the first), or force the stop. */
export type StopSignalAction = "drain" | "repeat" | "force";

/**
 * Classifies each SIGTERM/SIGINT a process receives: the first starts the graceful stop, any
 * signal within `windowMs` of it is a repeat of the same stop (ignored), a later one forces it.
 */
export const createStopSignals = (windowMs = REPEATED_SIGNAL_WINDOW_MS, now: () => number = Date.now) => {
  let firstAt: number | undefined;
  return (): StopSignalAction => {
    const at = now();
    if (firstAt === undefined) {
      firstAt = at;
      return "drain";
    }
    return at - firstAt < windowMs ? "repeat" : "force";
  };
};
