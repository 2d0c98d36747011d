import type { Session } from "../systems/types";
import { nowMs } from "../worker/protocol";

/**
 * Watches tracked jobs from outside, the same way for every system: each poll asks the system's
 * own tables which of the outstanding jobs are done (succeeded and acknowledged) and records
 * enqueue→done for them. Resolution is the poll interval plus one query; `queries` lets the
 * caller take the probe's own commits out of the per-job costs.
 */
export class DoneProbe {
  private readonly outstanding = new Map<string, number>();
  /** enqueued-at and enqueue→done of each job seen done. */
  readonly done: Array<{ t: number; ms: number }> = [];
  queries = 0;
  private timer: NodeJS.Timeout | undefined;
  private isPolling = false;

  constructor(private readonly session: Session) {}

  track(id: string, enqueuedAt: number): void {
    this.outstanding.set(id, enqueuedAt);
  }

  /** enqueue→done of the jobs enqueued in [from, to). */
  latencies(from: number, to: number): number[] {
    return this.done.filter((d) => d.t >= from && d.t < to).map((d) => d.ms);
  }

  get pending(): number {
    return this.outstanding.size;
  }

  async poll(): Promise<void> {
    if (this.outstanding.size === 0 || this.isPolling) return;
    this.isPolling = true;
    try {
      const ids = [...this.outstanding.keys()];
      const done = await this.session.doneAmong(ids);
      this.queries++;
      const at = nowMs();
      for (const id of done) {
        const t = this.outstanding.get(id)!;
        this.done.push({ t, ms: at - t });
        this.outstanding.delete(id);
      }
    } finally {
      this.isPolling = false;
    }
  }

  /** Polls every `intervalMs` in the background until `stop`. */
  start(intervalMs: number): void {
    this.timer = setInterval(() => void this.poll().catch(() => undefined), intervalMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Polls until nothing is outstanding or `timeoutMs` passes; true when all were seen done. */
  async settle(intervalMs: number, timeoutMs: number): Promise<boolean> {
    const end = nowMs() + timeoutMs;
    while (this.outstanding.size > 0 && nowMs() < end) {
      await this.poll();
      if (this.outstanding.size > 0) await new Promise((r) => setTimeout(r, intervalMs));
    }
    return this.outstanding.size === 0;
  }
}
