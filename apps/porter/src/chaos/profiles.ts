// The two forms of the chaos run. The short one (npm test) keeps every kind of fault at least
// once — SIGKILLs before and after the restart, a LISTEN kill before and after it, the restart
// with transactional producers committing into it — in about 20 s of chaos.
import type { ChaosOptions } from "./run-chaos";

type Profile = Omit<ChaosOptions, "seed" | "logDir" | "onProgress">;

const common = {
  workers: 3,
  concurrency: 8,
  transactionalProducers: 6,
  // Through the control plane: a crashed attempt's lease runs out within the run.
  leaseSeconds: 3,
  backoffBaseMs: 200,
  backoffCapMs: 2_000,
} satisfies Partial<Profile>;

/** `npm run chaos`: 150 s of chaos by default, a SIGKILL every 4 s. */
export const FULL_CHAOS = (durationMs = 150_000): Profile => ({
  ...common,
  durationMs,
  killEveryMs: 4_000,
  restartsAtMs: [Math.round(durationMs * 0.45)],
  listenKillsAtMs: [0.2, 0.35, 0.6, 0.8].map((f) => Math.round(durationMs * f)),
  jobsPerSecond: 60,
  settleTimeoutMs: 60_000,
});

/** The short form inside `npm test` (and `npm run chaos -- --short`): ~22 s of chaos. */
export const SHORT_CHAOS = (durationMs = 22_000): Profile => ({
  ...common,
  durationMs,
  killEveryMs: 4_500,
  restartsAtMs: [Math.round(durationMs * 0.45)],
  listenKillsAtMs: [0.25, 0.75].map((f) => Math.round(durationMs * f)),
  jobsPerSecond: 40,
  settleTimeoutMs: 35_000,
});
