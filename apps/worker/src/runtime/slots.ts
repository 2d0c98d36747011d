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

  constructor(
    readonly concurrency: number,
    private readonly deps: { attempt: AttemptDeps; logger: Logger; onFreed: () => void },
  ) {}

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

  /** Runs `job` in a slot; the caller checked that one is free. */
  launch(job: ClaimedJob): void {
    const attempt = new Attempt(job, this.deps.attempt);
    this.attempts.set(job.id, attempt);
    void attempt
      .run()
      .catch((error: unknown) => this.deps.logger.error("attempt crashed", { err: error, jobId: job.jobId }))
      .finally(() => {
        if (this.attempts.get(job.id) === attempt) this.attempts.delete(job.id);
        this.deps.onFreed();
        if (this.attempts.size === 0) for (const waiter of this.idleWaiters.splice(0)) waiter();
      });
  }

  /** Resolves once no attempt runs (at once when none does). */
  whenIdle(): Promise<void> {
    return new Promise((resolve) => (this.attempts.size === 0 ? resolve() : this.idleWaiters.push(resolve)));
  }
}
