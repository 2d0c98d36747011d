// Producers of a chaos run: a steady mix of diag jobs through core's enqueue (single calls, which
// core coalesces, and batches), and transactional producers that write their own row and enqueue
// inside their own transaction. Each keeps exactly what PostgreSQL acknowledged to it.
import { randomUUID } from "node:crypto";
import { type EnqueueInput, enqueueJobs } from "@porter/core";
import type pg from "pg";

/** What a job of the mix is meant to do, and so how it must end. */
export type JobKind = "effect" | "sleep" | "transient" | "permanent";

const TENANTS = ["tenant_A", "tenant_B", "tenant_C"] as const;

/** The three ways a handler applies an effect, taken in turn: fn (default), fn with txOnly, one statement. */
const EFFECT_PATHS = [{}, { tx_only: true }, { statement: true }] as const;

/** One job of the mix: diag.effect (unique key), diag.sleep, transient or permanent diag.fail. */
export const mixedJob = (random: () => number, runId: string, seq: number): { kind: JobKind; input: EnqueueInput } => {
  const tenant_id = TENANTS[seq % TENANTS.length]!;
  const idempotency_key = `${runId}-${seq}`;
  const roll = random();
  if (roll < 0.4) {
    // An effect that often is in flight when a worker or the server dies; a third each through the
    // default path, the txOnly path (fn first, the key claimed in the commit message) and as one
    // statement (the statement and the claim in one message).
    const payload = { key: `chaos-${runId}-${seq}`, ms: Math.floor(random() * 400), ...EFFECT_PATHS[seq % EFFECT_PATHS.length] };
    return { kind: "effect", input: { job_type: "diag.effect", tenant_id, idempotency_key, payload } };
  }
  if (roll < 0.65) {
    return { kind: "sleep", input: { job_type: "diag.sleep", tenant_id, idempotency_key, payload: { ms: 20 + Math.floor(random() * 600) } } };
  }
  if (roll < 0.9) {
    const payload = { mode: "transient", until_attempt: 2 + Math.floor(random() * 2) };
    return { kind: "transient", input: { job_type: "diag.fail", tenant_id, idempotency_key, payload } };
  }
  return { kind: "permanent", input: { job_type: "diag.fail", tenant_id, idempotency_key, payload: { mode: "permanent" } } };
};

/** Enqueues the mix at a steady rate until stopped; records every acknowledged job id. */
export class MixProducer {
  /** job_id → kind, for every enqueue PostgreSQL acknowledged. */
  readonly acknowledged = new Map<string, JobKind>();
  /** Enqueue calls that failed (the server was down): not acknowledged, so nothing is owed. */
  failedCalls = 0;
  private isStopped = false;
  private seq = 0;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly db: pg.Pool,
    private readonly options: { runId: string; jobsPerSecond: number; random: () => number },
  ) {}

  start(): void {
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.isStopped = true;
    await this.loop;
  }

  private async run(): Promise<void> {
    const tickMs = 100;
    const perTick = Math.max(1, Math.round((this.options.jobsPerSecond * tickMs) / 1000));
    let tick = 0;
    while (!this.isStopped) {
      const started = Date.now();
      const jobs = Array.from({ length: perTick }, () => mixedJob(this.options.random, this.options.runId, this.seq++));
      // Every third tick one batch (core's own transaction); otherwise concurrent single calls,
      // which core coalesces into shared statements.
      const calls = tick++ % 3 === 0 ? [jobs] : jobs.map((job) => [job]);
      await Promise.all(calls.map((batch) => this.enqueue(batch)));
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, tickMs - (Date.now() - started))));
    }
  }

  private async enqueue(batch: Array<{ kind: JobKind; input: EnqueueInput }>): Promise<void> {
    try {
      const results = await enqueueJobs(
        this.db,
        batch.map((job) => job.input),
      );
      for (const [i, result] of results.entries()) this.acknowledged.set(result.job_id, batch[i]!.kind);
    } catch {
      this.failedCalls += 1;
    }
  }
}

/** A producer's own table: its rows commit together with the jobs it enqueues. */
export const ORDERS_TABLE_SQL = `CREATE TABLE IF NOT EXISTS chaos_orders (
  order_key text PRIMARY KEY,
  job_id uuid NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp()
)`;

/**
 * Transactional producers: each loop BEGINs on its own client, inserts its own order row,
 * enqueues the order's job through core with that client (the caller's transaction), COMMITs,
 * and records the order as acknowledged only once COMMIT returned. Run them across an immediate
 * restart: every acknowledged order must keep its row and its job.
 */
export class TransactionalProducer {
  /** order_key → job_id, for every COMMIT PostgreSQL acknowledged. */
  readonly committed = new Map<string, string>();
  /** When each acknowledged COMMIT returned. */
  readonly committedAt: number[] = [];
  failedTransactions = 0;
  private isStopped = false;
  private loops: Array<Promise<void>> = [];

  constructor(
    private readonly db: pg.Pool,
    private readonly options: { runId: string; concurrency: number },
  ) {}

  start(): void {
    this.isStopped = false;
    this.loops = Array.from({ length: this.options.concurrency }, () => this.run());
  }

  async stop(): Promise<void> {
    this.isStopped = true;
    await Promise.all(this.loops);
  }

  private async run(): Promise<void> {
    while (!this.isStopped) {
      let client: pg.PoolClient;
      try {
        client = await this.db.connect();
      } catch {
        this.failedTransactions += 1;
        await new Promise((resolve) => setTimeout(resolve, 50));
        continue;
      }
      const orderKey = `order-${this.options.runId}-${randomUUID()}`;
      try {
        await client.query("BEGIN");
        const [result] = await enqueueJobs(client, [{ job_type: "diag.sleep", tenant_id: "tenant_A", idempotency_key: orderKey, payload: { ms: 5 } }]);
        await client.query(`INSERT INTO chaos_orders (order_key, job_id) VALUES ($1, $2)`, [orderKey, result!.job_id]);
        await client.query("COMMIT");
        this.committed.set(orderKey, result!.job_id);
        this.committedAt.push(Date.now());
        client.release();
      } catch (error) {
        this.failedTransactions += 1;
        await client.query("ROLLBACK").catch(() => undefined);
        client.release(error as Error);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  }
}
