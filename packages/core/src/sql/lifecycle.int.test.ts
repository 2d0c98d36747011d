import type { TJobError } from "@porter/contracts";
import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import type pg from "pg";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { getJob } from "../reads/get-job";
import { claimTimesOf } from "../testing/claim-times";
import { controlPlane } from "../testing/control-plane-factory";
import { stateOf } from "../testing/fixtures";
import { applyEffect, applyEffectStatement, StaleLeaseError } from "./apply-effect";
import { cancelJob } from "./cancel-job";
import { type ClaimedJob, claimJobs } from "./claim-jobs";
import { completeJobs } from "./complete-jobs";
import { type EnqueueInput, enqueueJobs } from "./enqueue-jobs";
import { expireJobs } from "./expire-jobs";
import { extendLeases } from "./extend-leases";
import { failJobs } from "./fail-jobs";
import { handBackJobs } from "./hand-back-jobs";
import { pruneFinished } from "./prune-finished";
import { redriveJobs } from "./redrive-jobs";
import { rescueExpiredLeases } from "./rescue-expired-leases";

const db = useTestDatabase();
let n = 0;
const input = (over: Partial<EnqueueInput> = {}): EnqueueInput => ({
  job_type: "q1.job",
  tenant_id: "tenant_A",
  payload: { n: ++n },
  idempotency_key: `life-${n}`,
  ...over,
});
const error = (attempt: number, code = "BOOM"): TJobError => ({
  code,
  class: "permanent",
  message: "boom",
  worker_version: "test",
  attempt,
  trace_id: "t",
  last_checkpoint: { step: 2 },
});
/** Enqueues one job and claims it (the queue is otherwise empty for this worker id's claim). */
const running = async (over: Partial<EnqueueInput> = {}): Promise<ClaimedJob> => {
  const [r] = await enqueueJobs(db.pool, [input(over)]);
  for (;;) {
    const claimed = await claimJobs(db.pool, { poolId: "p1", workerId: "w1", limit: 1 });
    if (claimed.length === 0) throw new Error("nothing claimed");
    if (claimed[0]!.jobId === r!.job_id) return claimed[0]!;
    await completeJobs(db.pool, [{ id: claimed[0]!.id, leaseToken: claimed[0]!.leaseToken, attempt: claimed[0]!.attempt, result: null }]);
  }
};

/** Claims (and acks the others) until `jobId` is claimed again, at a moved clock. */
const reclaim = async (jobId: string, now: Date): Promise<ClaimedJob> => {
  const claimed = await claimJobs(db.pool, { poolId: "p1", workerId: "w2", limit: 10_000, now });
  const mine = claimed.find((c) => c.jobId === jobId);
  const others = claimed.filter((c) => c.jobId !== jobId);
  await completeJobs(
    db.pool,
    others.map((c) => ({ id: c.id, leaseToken: c.leaseToken, attempt: c.attempt, result: null })),
  );
  if (!mine) throw new Error(`job ${jobId} was not claimable`);
  return mine;
};

beforeAll(async () => {
  await controlPlane(db.pool, { queues: [{ id: "q1", lease_seconds: 30, max_runtime_s: 60, retention_s: 3600 }] });
});

describe("fencing", () => {
  it("rejects ack, nack and heartbeat from a stale token and changes nothing", async () => {
    const job = await running();
    const stale = { id: job.id, leaseToken: String(BigInt(job.leaseToken) + 1000n), attempt: job.attempt };
    const before = await db.pool.query(`SELECT * FROM jobs WHERE id = $1`, [job.id]);
    expect(await completeJobs(db.pool, [{ ...stale, result: 1 }])).toEqual({ completed: [], stale: [job.id], handedOver: [] });
    expect(await failJobs(db.pool, [{ ...stale, outcome: "failed", error: error(1), next: { state: "DEAD" } }])).toEqual({ applied: [], stale: [job.id] });
    expect(await extendLeases(db.pool, [stale])).toEqual({ extended: [], lost: [job.id] });
    expect(await handBackJobs(db.pool, [stale])).toEqual({ handedBack: [], stale: [job.id] });
    const after = await db.pool.query(`SELECT * FROM jobs WHERE id = $1`, [job.id]);
    expect(after.rows).toEqual(before.rows);
    expect((await db.pool.query(`SELECT count(*)::int AS n FROM job_attempts WHERE job_id = $1`, [job.jobId])).rows[0].n).toBe(0);
  });

  it("rejects the right token with another attempt number: fencing does not rest on the token sequence alone", async () => {
    const job = await running();
    // A token handed out twice (a sequence value reused after a crash) must not pass for another attempt.
    const stale = { id: job.id, leaseToken: job.leaseToken, attempt: job.attempt - 1 };
    const before = await db.pool.query(`SELECT * FROM jobs WHERE id = $1`, [job.id]);
    expect(await completeJobs(db.pool, [{ ...stale, result: 1 }])).toEqual({ completed: [], stale: [job.id], handedOver: [] });
    expect(await failJobs(db.pool, [{ ...stale, outcome: "failed", error: error(1), next: { state: "DEAD" } }])).toEqual({ applied: [], stale: [job.id] });
    expect(await extendLeases(db.pool, [stale])).toEqual({ extended: [], lost: [job.id] });
    expect(await handBackJobs(db.pool, [stale])).toEqual({ handedBack: [], stale: [job.id] });
    await expect(
      applyEffect(db.pool, { id: job.id, jobId: job.jobId, tenantId: job.tenantId, attempt: stale.attempt, leaseToken: job.leaseToken }, "k", async () => 1),
    ).rejects.toBeInstanceOf(StaleLeaseError);
    expect((await db.pool.query(`SELECT * FROM jobs WHERE id = $1`, [job.id])).rows).toEqual(before.rows);
    expect((await completeJobs(db.pool, [{ id: job.id, leaseToken: job.leaseToken, attempt: job.attempt, result: 2 }])).completed).toEqual([job.id]);
  });

  it("rejects the old token after a lease was rescued and the job re-claimed", async () => {
    const job = await running();
    await rescueExpiredLeases(db.pool, { now: new Date(Date.now() + 120_000) });
    const again = await reclaim(job.jobId, new Date(Date.now() + 121_000));
    expect(again).toMatchObject({ attempt: 2 });
    expect((await completeJobs(db.pool, [{ id: job.id, leaseToken: job.leaseToken, attempt: job.attempt, result: 1 }])).stale).toEqual([job.id]);
    expect((await completeJobs(db.pool, [{ id: again.id, leaseToken: again.leaseToken, attempt: again.attempt, result: 2 }])).completed).toEqual([job.id]);
    expect(await getJob(db.pool, job.jobId)).toMatchObject({ status: "SUCCEEDED", result: 2 });
  });
});

describe("ack", () => {
  it("commits the result with SUCCEEDED and moves the job out of the hot table", async () => {
    const job = await running();
    expect(await completeJobs(db.pool, [{ id: job.id, leaseToken: job.leaseToken, attempt: job.attempt, result: { artifact_ref: "s3://x" } }])).toEqual({
      completed: [job.id],
      stale: [],
      handedOver: [],
    });
    expect((await db.pool.query(`SELECT 1 FROM jobs WHERE id = $1`, [job.id])).rowCount).toBe(0);
    const status = await getJob(db.pool, job.jobId);
    expect(status).toMatchObject({ status: "SUCCEEDED", result: { artifact_ref: "s3://x" }, attempt: 1 });
    expect(status!.timeline.map((e) => e.kind)).toEqual(["enqueued", "claimed", "succeeded"]);
  });
});

describe("heartbeat", () => {
  it("extends the lease but never past the max-runtime bound", async () => {
    const job = await running();
    const { claimedAt } = await claimTimesOf(db.pool, job);
    const later = new Date(claimedAt.getTime() + 50_000);
    const { extended } = await extendLeases(db.pool, [{ id: job.id, leaseToken: job.leaseToken, attempt: job.attempt }], later);
    expect(extended[0]!.leaseUntil.getTime()).toBe(claimedAt.getTime() + 60_000);
  });

  it("reports a cancel request", async () => {
    const job = await running();
    expect(await cancelJob(db.pool, { jobId: job.jobId, actor: "op", reason: "stop" })).toEqual({ job_id: job.jobId, status: "RUNNING" });
    const { extended } = await extendLeases(db.pool, [{ id: job.id, leaseToken: job.leaseToken, attempt: job.attempt }]);
    expect(extended[0]!.cancelRequested).toBe(true);
  });
});

describe("failures", () => {
  it("schedules a retry, then kills the job when attempts are exhausted, with a structured error", async () => {
    const job = await running({ max_attempts: 2 });
    const runAt = new Date(Date.now() - 1);
    await failJobs(db.pool, [
      {
        id: job.id,
        leaseToken: job.leaseToken,
        attempt: job.attempt,
        outcome: "failed",
        error: { ...error(1), class: "retryable" },
        next: { state: "RETRY_WAIT", runAt },
      },
    ]);
    expect(await stateOf(db.pool, job.jobId)).toBe("RETRY_WAIT");
    const [second] = await claimJobs(db.pool, { poolId: "p1", workerId: "w2", limit: 1 });
    expect(second).toMatchObject({ jobId: job.jobId, attempt: 2 });
    await failJobs(db.pool, [
      { id: second!.id, leaseToken: second!.leaseToken, attempt: second!.attempt, outcome: "failed", error: error(2), next: { state: "DEAD" } },
    ]);
    const status = await getJob(db.pool, job.jobId);
    expect(status).toMatchObject({ status: "DEAD", partial: false, error: { code: "BOOM", attempt: 2, last_checkpoint: { step: 2 } } });
    expect(status!.timeline.map((e) => e.kind)).toEqual(["enqueued", "claimed", "attempt_failed", "retry_scheduled", "claimed", "attempt_failed", "dead"]);
  });

  it("marks a dead job that recorded effects as partial", async () => {
    const job = await running();
    await applyEffect(db.pool, job, `fx-${job.jobId}`, async () => "sent");
    await failJobs(db.pool, [{ id: job.id, leaseToken: job.leaseToken, attempt: job.attempt, outcome: "failed", error: error(1), next: { state: "DEAD" } }]);
    expect(await getJob(db.pool, job.jobId)).toMatchObject({ status: "DEAD", partial: true });
  });
});

describe("lease rescue", () => {
  it("returns expired leases to READY and burns the attempt", async () => {
    const job = await running();
    const report = await rescueExpiredLeases(db.pool, { now: new Date(Date.now() + 31_000) });
    expect(report.requeued).toBeGreaterThanOrEqual(1);
    const { rows } = await db.pool.query(`SELECT state, attempt FROM jobs WHERE id = $1`, [job.id]);
    expect(rows[0]).toEqual({ state: "READY", attempt: 1 });
    const status = await getJob(db.pool, job.jobId);
    expect(status!.timeline.find((e) => e.kind === "lease_expired")?.data).toMatchObject({ possible_duplicate: true });
  });

  it("kills a job whose lease expired on its last attempt", async () => {
    const job = await running({ max_attempts: 1 });
    await rescueExpiredLeases(db.pool, { now: new Date(Date.now() + 31_000) });
    expect(await getJob(db.pool, job.jobId)).toMatchObject({ status: "DEAD", error: { code: "LEASE_EXPIRED" } });
  });

  it("cannot overwrite a job acked meanwhile", async () => {
    const job = await running();
    await completeJobs(db.pool, [{ id: job.id, leaseToken: job.leaseToken, attempt: job.attempt, result: "ok" }]);
    await rescueExpiredLeases(db.pool, { now: new Date(Date.now() + 31_000) });
    expect(await stateOf(db.pool, job.jobId)).toBe("SUCCEEDED");
  });

  it("waits for an in-flight ack instead of racing it", async () => {
    const job = await running();
    const acker = await db.pool.connect();
    try {
      await acker.query("BEGIN");
      await completeJobs(acker, [{ id: job.id, leaseToken: job.leaseToken, attempt: job.attempt, result: "ok" }]);
      // The ack holds the row lock: rescue skips the row rather than touching it.
      const report = await rescueExpiredLeases(db.pool, { now: new Date(Date.now() + 31_000) });
      await acker.query("COMMIT");
      expect(report.requeued + report.dead).toBeGreaterThanOrEqual(0);
    } finally {
      acker.release();
    }
    expect(await stateOf(db.pool, job.jobId)).toBe("SUCCEEDED");
  });
});

describe("drain hand-back", () => {
  it("returns the job to READY without burning the attempt", async () => {
    const job = await running();
    expect((await handBackJobs(db.pool, [{ id: job.id, leaseToken: job.leaseToken, attempt: job.attempt }])).handedBack).toEqual([job.id]);
    const { rows } = await db.pool.query(`SELECT state, attempt FROM jobs WHERE id = $1`, [job.id]);
    expect(rows[0]).toEqual({ state: "READY", attempt: 0 });
  });
});

describe("cancel", () => {
  it("cancels queued work at once, is idempotent, and refuses finished work with 409", async () => {
    const [r] = await enqueueJobs(db.pool, [input()]);
    expect(await cancelJob(db.pool, { jobId: r!.job_id, actor: "op" })).toEqual({ job_id: r!.job_id, status: "CANCELLED" });
    expect(await cancelJob(db.pool, { jobId: r!.job_id, actor: "op" })).toEqual({ job_id: r!.job_id, status: "CANCELLED" });
    const done = await running();
    await completeJobs(db.pool, [{ id: done.id, leaseToken: done.leaseToken, attempt: done.attempt, result: null }]);
    await expect(cancelJob(db.pool, { jobId: done.jobId, actor: "op" })).rejects.toMatchObject({ code: "CONFLICT" });
  });

  it("hides another tenant's job (404)", async () => {
    const [r] = await enqueueJobs(db.pool, [input()]);
    await expect(cancelJob(db.pool, { jobId: r!.job_id, tenantIds: ["tenant_B"], actor: "k" })).rejects.toMatchObject({ code: "NOT_FOUND" });
    expect(await stateOf(db.pool, r!.job_id)).toBe("READY");
  });

  it("a cancelled running job whose worker died ends CANCELLED on rescue", async () => {
    const job = await running();
    await cancelJob(db.pool, { jobId: job.jobId, actor: "op" });
    await rescueExpiredLeases(db.pool, { now: new Date(Date.now() + 31_000) });
    expect(await stateOf(db.pool, job.jobId)).toBe("CANCELLED");
  });
});

describe("deadlines", () => {
  it("expires queued work whose deadline passed", async () => {
    const [r] = await enqueueJobs(db.pool, [input({ deadline_at: new Date(Date.now() + 1000).toISOString() })]);
    const report = await expireJobs(db.pool, { now: new Date(Date.now() + 5000) });
    expect(report.expired).toBeGreaterThanOrEqual(1);
    expect(await getJob(db.pool, r!.job_id)).toMatchObject({ status: "EXPIRED", error: { code: "DEADLINE_EXCEEDED" } });
  });
});

describe("redrive", () => {
  const kill = async (over: Partial<EnqueueInput> = {}, withEffect = false) => {
    const job = await running(over);
    if (withEffect) await applyEffect(db.pool, job, `fx-${job.jobId}`, async () => 1);
    await failJobs(db.pool, [
      { id: job.id, leaseToken: job.leaseToken, attempt: job.attempt, outcome: "failed", error: error(1, "REDRIVE_ME"), next: { state: "DEAD" } },
    ]);
    return job.jobId;
  };

  it("moves DEAD jobs back to READY with a fresh attempt budget, audited", async () => {
    const id = await kill();
    const out = await redriveJobs(db.pool, { jobIds: [id], actor: "alice", reason: "fixed upstream" });
    expect(out).toEqual({ redriven: [id], skipped: [] });
    const { rows } = await db.pool.query(`SELECT state, attempt, redrive_count FROM jobs WHERE job_id = $1`, [id]);
    expect(rows[0]).toEqual({ state: "READY", attempt: 0, redrive_count: 1 });
    const audit = await db.pool.query(`SELECT actor, action, reason FROM audit_log WHERE object_id = $1`, [id]);
    expect(audit.rows).toEqual([{ actor: "alice", action: "job.redrive", reason: "fixed upstream" }]);
    expect((await getJob(db.pool, id))!.timeline.at(-1)).toMatchObject({ kind: "redriven", actor: "alice" });
  });

  it("skips partially completed jobs unless forced, and reports non-dead ids", async () => {
    const partial = await kill({}, true);
    const [queued] = await enqueueJobs(db.pool, [input()]);
    const out = await redriveJobs(db.pool, { jobIds: [partial, queued!.job_id], actor: "alice" });
    expect(out.redriven).toEqual([]);
    expect(out.skipped).toEqual(
      expect.arrayContaining([
        { job_id: partial, reason: "partial" },
        { job_id: queued!.job_id, reason: "not_dead" },
      ]),
    );
    expect((await redriveJobs(db.pool, { jobIds: [partial], actor: "alice", force: true })).redriven).toEqual([partial]);
  });

  it("redrives by filter, with a dry run that changes nothing", async () => {
    await kill();
    await kill();
    const dry = await redriveJobs(db.pool, { filter: { errorCode: "REDRIVE_ME" }, actor: "bob", dryRun: true });
    expect(dry.redriven.length).toBeGreaterThanOrEqual(2);
    const deadBefore = (await db.pool.query(`SELECT count(*)::int AS n FROM finished_jobs WHERE state = 'DEAD'`)).rows[0].n;
    expect(deadBefore).toBeGreaterThanOrEqual(2);
    const real = await redriveJobs(db.pool, { filter: { errorCode: "REDRIVE_ME" }, actor: "bob" });
    expect(real.redriven.sort()).toEqual(dry.redriven.sort());
  });

  it("refuses the audit log's rewriting at the database level", async () => {
    await expect(db.pool.query(`UPDATE audit_log SET actor = 'mallory'`)).rejects.toThrow(/append-only/);
    await expect(db.pool.query(`DELETE FROM audit_log`)).rejects.toThrow(/append-only/);
  });
});

describe("effects ledger", () => {
  it("applies an effect once per (tenant, key) even across attempts", async () => {
    const job = await running();
    const key = `send-${job.jobId}`;
    let runs = 0;
    const first = await applyEffect(db.pool, job, key, async () => ++runs);
    await rescueExpiredLeases(db.pool, { now: new Date(Date.now() + 31_000) });
    const again = await reclaim(job.jobId, new Date(Date.now() + 32_000));
    const second = await applyEffect(db.pool, again, key, async () => ++runs);
    expect(first).toEqual({ applied: true, result: 1 });
    expect(second).toEqual({ applied: false, result: 1 });
    expect(runs).toBe(1);
  });

  it("takes any key and result text as data: quotes, backslashes and SQL in them are stored and matched verbatim", async () => {
    // ctx.effect sends its values as escaped literals (two simple-protocol messages): a key or a
    // result that looks like SQL must stay a value.
    const job = await running();
    const key = `o'brien\\'); DROP TABLE jobs; -- ${job.jobId} \u00e9`;
    const result = { note: "it's \\ done'); --" };
    expect(await applyEffect(db.pool, job, key, async () => result)).toEqual({ applied: true, result });
    expect(await applyEffect(db.pool, job, key, async () => "again")).toEqual({ applied: false, result });
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM jobs WHERE job_id = $1`, [job.jobId]);
    expect(rows[0].n).toBe(1);
  });

  it("refuses an effect under a stale lease, and the write inside it does not commit", async () => {
    const job = await running();
    await rescueExpiredLeases(db.pool, { now: new Date(Date.now() + 31_000) });
    await expect(applyEffect(db.pool, job, `stale-${job.jobId}`, async () => 1)).rejects.toBeInstanceOf(StaleLeaseError);
  });

  it("rolls the ledger back when the effect throws, so a retry applies it", async () => {
    const job = await running();
    const key = `throws-${job.jobId}`;
    await expect(
      applyEffect(db.pool, job, key, async (tx) => {
        await tx.query(`INSERT INTO diag_effects (key, applied) VALUES ($1, 1)`, [key]);
        throw new Error("provider down");
      }),
    ).rejects.toThrow("provider down");
    expect((await db.pool.query(`SELECT 1 FROM diag_effects WHERE key = $1`, [key])).rowCount).toBe(0);
    expect((await applyEffect(db.pool, job, key, async () => "ok")).applied).toBe(true);
  });
});

describe("effects ledger, txOnly (fn first, the claim in the commit message)", () => {
  const write = (key: string) => async (tx: pg.PoolClient) => {
    await tx.query(`INSERT INTO diag_effects (key, applied) VALUES ($1, 1) ON CONFLICT (key) DO UPDATE SET applied = diag_effects.applied + 1`, [key]);
    return (await tx.query<{ applied: number }>(`SELECT applied FROM diag_effects WHERE key = $1`, [key])).rows[0]!.applied;
  };
  const applied = async (key: string) =>
    (await db.pool.query<{ applied: number }>(`SELECT applied FROM diag_effects WHERE key = $1`, [key])).rows[0]?.applied ?? 0;

  it("applies once per (tenant, key) across attempts: a later attempt's writes roll back and it gets the stored result", async () => {
    const job = await running();
    const key = `tx-o'brien\\ ${job.jobId}`;
    expect(await applyEffect(db.pool, job, key, write(key), { txOnly: true })).toEqual({ applied: true, result: 1 });
    await rescueExpiredLeases(db.pool, { now: new Date(Date.now() + 31_000) });
    const again = await reclaim(job.jobId, new Date(Date.now() + 32_000));
    let runs = 0;
    const second = await applyEffect(
      db.pool,
      again,
      key,
      async (tx) => {
        runs += 1;
        return write(key)(tx);
      },
      { txOnly: true },
    );
    expect(second).toEqual({ applied: false, result: 1 });
    expect(runs).toBe(1); // run before the claim, rolled back; the ordinary path that read the result did not run it
    expect(await applied(key)).toBe(1);
    const { rows } = await db.pool.query(`SELECT job_id::text, attempt, result FROM job_effects WHERE key = $1`, [key]);
    expect(rows).toEqual([{ job_id: job.jobId, attempt: job.attempt, result: 1 }]);
  });

  it("refuses the effect under a stale lease and rolls fn's writes back; the job row is unchanged", async () => {
    const job = await running();
    await rescueExpiredLeases(db.pool, { now: new Date(Date.now() + 31_000) });
    const before = (await db.pool.query(`SELECT * FROM jobs WHERE id = $1`, [job.id])).rows;
    const key = `tx-stale-${job.jobId}`;
    await expect(applyEffect(db.pool, job, key, write(key), { txOnly: true })).rejects.toBeInstanceOf(StaleLeaseError);
    expect(await applied(key)).toBe(0);
    expect((await db.pool.query(`SELECT 1 FROM job_effects WHERE key = $1`, [key])).rowCount).toBe(0);
    expect((await db.pool.query(`SELECT * FROM jobs WHERE id = $1`, [job.id])).rows).toEqual(before);
  });

  it("rolls back when fn throws, so a retry applies it", async () => {
    const job = await running();
    const key = `tx-throws-${job.jobId}`;
    await expect(
      applyEffect(
        db.pool,
        job,
        key,
        async (tx) => {
          await write(key)(tx);
          throw new Error("constraint broken");
        },
        { txOnly: true },
      ),
    ).rejects.toThrow("constraint broken");
    expect(await applied(key)).toBe(0);
    expect(await applyEffect(db.pool, job, key, write(key), { txOnly: true })).toEqual({ applied: true, result: 1 });
  });

  it("two jobs racing for one key: one commits, the other's writes roll back and it returns the winner's result", async () => {
    const [a, b] = [await running(), await running()];
    const key = `tx-race-${a.jobId}`;
    // Each fn writes a row of its own and waits for the other's to be written too: both reach
    // their commit message with fn done, then the closes race on the ledger's unique key.
    let arrived = 0;
    let go: () => void = () => undefined;
    const both = new Promise<void>((resolve) => (go = resolve));
    const fn = (job: ClaimedJob) => async (tx: pg.PoolClient) => {
      const mine = `${key}-${job.jobId}`;
      await write(mine)(tx);
      if (++arrived === 2) go();
      await both;
      return job.jobId;
    };
    const [ra, rb] = await Promise.all([applyEffect(db.pool, a, key, fn(a), { txOnly: true }), applyEffect(db.pool, b, key, fn(b), { txOnly: true })]);
    expect([ra.applied, rb.applied].sort()).toEqual([false, true]);
    const winner = ra.applied ? a : b;
    expect(ra.result).toBe(winner.jobId);
    expect(rb.result).toBe(winner.jobId);
    expect(await applied(`${key}-${winner.jobId}`)).toBe(1);
    expect(await applied(`${key}-${(winner === a ? b : a).jobId}`)).toBe(0);
  });

  it("leaves the connection it used out of pipeline mode and usable", async () => {
    const one = createPool(db.connectionString, { max: 1 });
    try {
      const job = await running();
      const key = `tx-pipe-${job.jobId}`;
      expect((await applyEffect(one, job, key, write(key), { txOnly: true })).applied).toBe(true);
      const client = await one.connect();
      try {
        expect((client as pg.PoolClient & { pipeline: boolean }).pipeline).toBe(false);
        expect((await client.query(`SELECT applied FROM diag_effects WHERE key = $1`, [key])).rows).toEqual([{ applied: 1 }]);
      } finally {
        client.release();
      }
    } finally {
      await one.end();
    }
  });
});

describe("effects ledger, one statement (the statement, the lease check and the ledger row in one message)", () => {
  const WRITE = `INSERT INTO diag_effects (key, applied) VALUES ($1, 1) ON CONFLICT (key) DO UPDATE SET applied = diag_effects.applied + 1 RETURNING applied`;
  const write = (key: string) => ({ text: WRITE, values: [key] });
  const applied = async (key: string) =>
    (await db.pool.query<{ applied: number }>(`SELECT applied FROM diag_effects WHERE key = $1`, [key])).rows[0]?.applied ?? 0;
  const ledger = async (key: string) => (await db.pool.query(`SELECT job_id::text, attempt, result FROM job_effects WHERE key = $1`, [key])).rows;

  it("applies once per (tenant, key) across attempts; a later attempt's statement rolls back and it learns the key was applied", async () => {
    const job = await running();
    const key = `st-o'brien\\ ${job.jobId}`;
    expect(await applyEffectStatement(db.pool, job, key, write(key))).toEqual({ applied: true, rowCount: 1, rows: [{ applied: 1 }] });
    await rescueExpiredLeases(db.pool, { now: new Date(Date.now() + 31_000) });
    const again = await reclaim(job.jobId, new Date(Date.now() + 32_000));
    expect(await applyEffectStatement(db.pool, again, key, write(key))).toEqual({ applied: false, rowCount: 0, rows: [] });
    expect(await applied(key)).toBe(1);
    expect(await ledger(key)).toEqual([{ job_id: job.jobId, attempt: job.attempt, result: null }]);
  });

  it("is one round trip: one Sync, no other message waited for, and it marks the attempt started", async () => {
    const one = createPool(db.connectionString, { max: 1 });
    const client = await one.connect();
    client.release();
    const connection = (client as unknown as { connection: { sync: () => void; query: (text: string) => void } }).connection;
    const syncs = vi.spyOn(connection, "sync");
    const simple = vi.spyOn(connection, "query");
    try {
      const job = await running();
      await db.pool.query(`UPDATE jobs SET started_at = NULL WHERE id = $1`, [job.id]);
      const key = `st-one-${job.jobId}`;
      expect((await applyEffectStatement(one, job, key, write(key))).applied).toBe(true);
      expect(syncs).toHaveBeenCalledTimes(1);
      expect(simple).not.toHaveBeenCalled();
      const { rows } = await db.pool.query(`SELECT started_at IS NOT NULL AS started FROM jobs WHERE id = $1`, [job.id]);
      expect(rows).toEqual([{ started: true }]);
    } finally {
      syncs.mockRestore();
      simple.mockRestore();
      await one.end();
    }
  });

  it("refuses the effect under a stale lease: the statement's write and the ledger row roll back, the job row is unchanged", async () => {
    const job = await running();
    await rescueExpiredLeases(db.pool, { now: new Date(Date.now() + 31_000) });
    const before = (await db.pool.query(`SELECT * FROM jobs WHERE id = $1`, [job.id])).rows;
    const key = `st-stale-${job.jobId}`;
    await expect(applyEffectStatement(db.pool, job, key, write(key))).rejects.toBeInstanceOf(StaleLeaseError);
    expect(await applied(key)).toBe(0);
    expect(await ledger(key)).toEqual([]);
    expect((await db.pool.query(`SELECT * FROM jobs WHERE id = $1`, [job.id])).rows).toEqual(before);
  });

  it("a statement that fails, or a value pg cannot send, commits nothing and leaves the connection usable; a retry applies", async () => {
    const one = createPool(db.connectionString, { max: 1 });
    try {
      const job = await running();
      const key = `st-fails-${job.jobId}`;
      // Fails in the backend (a cast): the close behind it is skipped, the ledger row never written.
      await expect(
        applyEffectStatement(one, job, key, { text: `INSERT INTO diag_effects (key, applied) VALUES ($1, $2::int)`, values: [key, "not a number"] }),
      ).rejects.toMatchObject({ code: "22P02" });
      // Fails in pg before anything is sent (a value that cannot be serialised).
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      await expect(applyEffectStatement(one, job, key, { text: WRITE, values: [cyclic] })).rejects.toThrow();
      expect(await applied(key)).toBe(0);
      expect(await ledger(key)).toEqual([]);
      expect((await one.query(`SELECT 1 AS ok`)).rows).toEqual([{ ok: 1 }]);
      expect(await applyEffectStatement(one, job, key, write(key))).toEqual({ applied: true, rowCount: 1, rows: [{ applied: 1 }] });
    } finally {
      await one.end();
    }
  });

  it("two jobs racing for one key: both statements run, one commits, the other's write rolls back and it is told the key was applied", async () => {
    const [a, b] = [await running(), await running()];
    const key = `st-race-${a.jobId}`;
    // Each statement sleeps before its write, so both are inside their transactions at once and the
    // closes race on the ledger's unique key.
    const slow = (job: ClaimedJob) => ({
      text: `INSERT INTO diag_effects (key, applied) SELECT $1, 1 FROM pg_sleep(0.2) RETURNING applied`,
      values: [`${key}-${job.jobId}`],
    });
    const [ra, rb] = await Promise.all([applyEffectStatement(db.pool, a, key, slow(a)), applyEffectStatement(db.pool, b, key, slow(b))]);
    expect([ra.applied, rb.applied].sort()).toEqual([false, true]);
    const [winner, loser] = ra.applied ? [a, b] : [b, a];
    expect(await applied(`${key}-${winner.jobId}`)).toBe(1);
    expect(await applied(`${key}-${loser.jobId}`)).toBe(0);
    expect(await ledger(key)).toEqual([{ job_id: winner.jobId, attempt: winner.attempt, result: null }]);
  });
});

describe("retention", () => {
  it("prunes finished jobs past retention with their history, keeps DEAD ones and the hot table", async () => {
    const done = await running();
    await completeJobs(db.pool, [{ id: done.id, leaseToken: done.leaseToken, attempt: done.attempt, result: null }]);
    const dead = await running();
    await failJobs(db.pool, [{ id: dead.id, leaseToken: dead.leaseToken, attempt: dead.attempt, outcome: "failed", error: error(1), next: { state: "DEAD" } }]);
    const [queued] = await enqueueJobs(db.pool, [input()]);
    const { pruned } = await pruneFinished(db.pool, { now: new Date(Date.now() + 7200_000) });
    expect(pruned).toBeGreaterThanOrEqual(1);
    expect(await stateOf(db.pool, done.jobId)).toBeNull();
    expect((await db.pool.query(`SELECT count(*)::int AS n FROM job_attempts WHERE job_id = $1`, [done.jobId])).rows[0].n).toBe(0);
    expect(await stateOf(db.pool, dead.jobId)).toBe("DEAD");
    expect(await stateOf(db.pool, queued!.job_id)).toBe("READY");
  });
});
