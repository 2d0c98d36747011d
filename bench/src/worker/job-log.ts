import { durationOf, mix } from "../realistic-mix";
import { type BenchPayload, type Distribution, distribution, type HandlerMode, nowMs, type Progress } from "./protocol";
import { traceEvent } from "./trace";

/** The effect a successful faulty-mode job applies once: a duplicated execution shows as applied > 1. */
export const EFFECT_SQL = `INSERT INTO bench_effects (k, applied) VALUES ($1, 1)
  ON CONFLICT (k) DO UPDATE SET applied = bench_effects.applied + 1`;

/** Thrown by a faulty-mode handler for the attempts chosen to fail. */
export class InjectedFailure extends Error {
  constructor(k: number, attempt: number) {
    super(`injected transient failure of job ${k} on attempt ${attempt}`);
  }
}

/**
 * What the handlers of every system record, identically: executions, successes, failures,
 * enqueue→start latency (from the payload's `t`), and successes per job in faulty mode.
 */
export class JobLog {
  private executed = 0;
  private succeeded = 0;
  private failed = 0;
  private firstStartAt = 0;
  private lastEndAt = 0;
  private enqueuedAt: number[] = [];
  private startLatency: number[] = [];
  /** Successes per job number (saturating at 255): catches a job run to success twice. */
  private successes = new Uint8Array(1 << 16);
  private distinct = 0;
  private repeated = 0;

  constructor(readonly mode: HandlerMode) {}

  /**
   * Runs one attempt: records its start, throws an InjectedFailure for the chosen attempts, or
   * applies the effect (faulty mode) and records the success.
   */
  async run(payload: BenchPayload, attempt: number, applyEffect: (k: number) => Promise<unknown>): Promise<void> {
    const started = nowMs();
    traceEvent("start", payload.k);
    this.executed++;
    if (this.firstStartAt === 0) this.firstStartAt = started;
    if (payload.t !== undefined) {
      this.enqueuedAt.push(payload.t);
      this.startLatency.push(started - payload.t);
    }
    if (this.mode.kind === "faulty") {
      if (attempt === 1 && mix(payload.k) % 100 < this.mode.failPercent) {
        this.failed++;
        this.lastEndAt = nowMs();
        throw new InjectedFailure(payload.k, attempt);
      }
      await applyEffect(payload.k);
    } else if (this.mode.kind === "realistic") {
      const ms = durationOf(payload.k);
      if (ms > 0) await new Promise((r) => setTimeout(r, ms));
    }
    this.countSuccess(payload.k);
    this.succeeded++;
    this.lastEndAt = nowMs();
  }

  progress(): Progress {
    return { executed: this.executed, succeeded: this.succeeded, failed: this.failed, firstStartAt: this.firstStartAt, lastEndAt: this.lastEndAt };
  }

  /** enqueue→start of the jobs enqueued in [from, to). */
  latency(from: number, to: number): Distribution {
    const picked: number[] = [];
    for (let i = 0; i < this.enqueuedAt.length; i++) {
      const t = this.enqueuedAt[i]!;
      if (t >= from && t < to) picked.push(this.startLatency[i]!);
    }
    return distribution(picked);
  }

  private countSuccess(k: number): void {
    if (k >= this.successes.length) {
      const grown = new Uint8Array(Math.max(k + 1, this.successes.length * 2));
      grown.set(this.successes);
      this.successes = grown;
    }
    const before = this.successes[k]!;
    if (before === 0) this.distinct++;
    if (before === 1) this.repeated++;
    if (before < 255) this.successes[k] = before + 1;
  }

  repeatedSuccesses(): number {
    return this.repeated;
  }

  distinctSucceeded(): number {
    return this.distinct;
  }
}
