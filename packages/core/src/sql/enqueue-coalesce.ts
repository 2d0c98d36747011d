import { AppError, type TEnqueueResult } from "@porter/contracts";
import type pg from "pg";
import { asInputError, chunkArrays, insertChunk, isDataError, resolveDuplicates } from "./enqueue-insert";
import type { Prepared } from "./enqueue-prepare";

/** Most single enqueues one coalesced statement carries. */
const MAX_COALESCED = 500;

/**
 * Single-job enqueues on one pool, coalesced: a call arriving while none is being written is
 * written at once (no added latency); calls arriving meanwhile wait for that write and then go
 * together — one virtual-time reservation and one insert statement (autocommit, one commit, one
 * NOTIFY per pool) for all of them. Under concurrency this is group commit done by the
 * application: 32 concurrent producers no longer take 32 commits and 32 NOTIFY locks per round.
 * Each job stays its own all-or-nothing unit: the insert should not fail for one job's sake
 * (conflicts are ON CONFLICT DO NOTHING, the contracts refuse what PostgreSQL cannot store), and
 * if a value still makes PostgreSQL refuse the shared statement, the members are written again
 * one by one so that only that job fails. A job that hit an existing key gets its own answer —
 * the existing job, or 409 — without touching the others.
 * Tenants with admission limits never come here (their admission is a transaction per call).
 */
class SingleEnqueues {
  private waiting: Array<{ job: Prepared; notify: boolean; resolve: (r: TEnqueueResult) => void; reject: (e: unknown) => void }> = [];
  private isWriting = false;

  constructor(private readonly pool: pg.Pool) {}

  add(job: Prepared, notify: boolean): Promise<TEnqueueResult> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ job, notify, resolve, reject });
      if (!this.isWriting) void this.write();
    });
  }

  private async write(): Promise<void> {
    this.isWriting = true;
    try {
      while (this.waiting.length > 0) {
        const group = this.waiting.splice(0, MAX_COALESCED);
        try {
          await this.insert(group);
        } catch (error) {
          if (group.length > 1 && isDataError(error)) {
            // Contracts keep such rows out, so this is defence in depth: one member's value was
            // refused for the whole statement. Each member again on its own, so that only the
            // culprit fails (with a 400) and everyone else is stored as if nothing happened.
            for (const member of group) await this.insert([member]).catch((e: unknown) => member.reject(asInputError(e)));
          } else {
            for (const g of group) g.reject(asInputError(error));
          }
        }
      }
    } finally {
      this.isWriting = false;
    }
  }

  /** One statement for `group`; answers each member, or throws (answering none) when the statement fails. */
  private async insert(group: SingleEnqueues["waiting"]): Promise<void> {
    // Positions in this statement: reservation and results are indexed by `ord`.
    const batch = group.map((g, ord) => ({ ...g.job, ord }));
    const now = new Date();
    const notifyPools = [...new Set(batch.filter((p, i) => group[i]!.notify && p.runAt <= p.createdAt).map((p) => p.poolId))];
    // One statement reserves the virtual time and inserts: it commits on its own at once, so
    // the clock rows are held only for its commit (and one statement serves the whole group).
    const inserted = await insertChunk(this.pool, chunkArrays(batch, undefined, now), now, notifyPools, { reserve: true });
    const outcomes = await resolveDuplicates(this.pool, batch, inserted);
    group.forEach((g, i) => {
      const outcome = outcomes[i]!;
      if (outcome instanceof AppError) g.reject(new AppError(outcome.code, { message: outcome.message, details: { ...outcome.details, index: 0 } }));
      else g.resolve(outcome);
    });
  }
}

const singles = new WeakMap<pg.Pool, SingleEnqueues>();

/**
 * Enqueues one prepared job on Porter's own pool, coalesced with the other single enqueues in
 * flight on that pool (see `SingleEnqueues`): its own all-or-nothing unit, in a shared statement.
 */
export const enqueueCoalesced = (pool: pg.Pool, job: Prepared, notify: boolean): Promise<TEnqueueResult> =>
  (singles.get(pool) ?? singles.set(pool, new SingleEnqueues(pool)).get(pool)!).add(job, notify);
