import type { ClaimedJob } from "@porter/core";
import type { Logger } from "../logger";
import { Attempt, type AttemptDeps } from "./attempt";

/**
 * The worker's slots: at most `concurrency` attempts run at once, keyed by row id. `launch` runs
 * an attempt in a free slot; when it ends, the slot is freed and `onFreed` refills it (the prefetch
 * buffer first, then a claim if more work is likely). `whenIdle` resolves once no attempt runs.
 */
export class Slots {
  private readonly attempts = new Map<string, Attempt>();
  private idleWaiters: Array<() => void> = [];
  /** The attempts' dependencies with this slot set's end-of-attempt callback: one object for all. */
  private readonly attemptDeps: AttemptDeps;

  constructor(
    readonly concurrency: number,
    private readonly deps: { attempt: AttemptDeps; logger: Logger; onFreed: () => void },
  ) {
    this.attemptDeps = { ...deps.attempt, onEnded: (attempt) => this.ended(attempt) };
  }

  /** Attempts running now. */
  get size(): number {
    return this.attempts.size;
  }

  get(rowId: string): Attempt | undefined {
    return this.attempts.get(rowId);
  }

  values(): IterableIterator<Attempt> {
    return this.attempts.values();
  }

  /** Runs `job` in a slot; the caller checked that one is free. The attempt ends in `ended` (its `run()` never rejects). */
  launch(job: ClaimedJob): void {
    const attempt = new Attempt(job, this.attemptDeps);
    this.attempts.set(job.id, attempt);
    void attempt.run();
  }

  /** Frees the slot of an attempt that ended, and refills it. */
  private ended(attempt: Attempt): void {
    const id = attempt.job.id;
    if (this.attempts.get(id) === attempt) this.attempts.delete(id);
    this.deps.onFreed();
    if (this.attempts.size === 0) for (const waiter of this.idleWaiters.splice(0)) waiter();
  }

  /** Resolves once no attempt runs (at once when none does). */
  whenIdle(): Promise<void> {
    return new Promise((resolve) => (this.attempts.size === 0 ? resolve() : this.idleWaiters.push(resolve)));
  }
}
