import { perJob, settledStats } from "../database";
import { meanDurationMs, REALISTIC_QUEUES, REALISTIC_TENANTS, slotsPerQueue } from "../realistic-mix";
import { openRealistic } from "../systems/realistic";
import { fmt } from "../table";
import { nowMs } from "../worker/protocol";
import { type BenchContext, COST_COLUMNS, interleave, isPeerDefault, perJobValues, RowSet, runLabel, type ScenarioResult, sleep } from "./common";

/**
 * (i) Realistic: the demo's configuration instead of one uncapped queue and one tenant. Four queues
 * in one pool (bulk capped at 4 and reports at 8 get 1/8 of the jobs each, default and events 3/8),
 * three tenants with equal backlogs and weights 1/1/2, handlers sleeping 0–20 ms (half of them 0).
 * Per run, one worker process: (1) burn-down of N jobs preloaded through the producer's batch API;
 * (2) on the same, now idle worker, arrivals at a fixed rate (the same for every system, far below
 * each one's burn-down) with enqueue→start p50/p99 over the window after a 1 s warm-up. The peers run
 * tuned only, on their nearest configuration (see the notes).
 */
export const realistic = async (ctx: BenchContext): Promise<ScenarioResult> => {
  const rows = new RowSet();
  const details: unknown[] = [];
  const { realisticJobs: jobs, realisticCapS: capS, realisticArrivals: rate, realisticSeconds: windowS } = ctx.sizes;
  const variants = ctx.variants.filter((v) => !isPeerDefault(v));
  await interleave(ctx, variants, { runs: ctx.sizes.runs, worker: { kind: "realistic" } }, async (session, run, worker) => {
    const label = `(i) ${session.variant.label}, ${runLabel(run, ctx.sizes.runs)}`;
    const producer = await openRealistic(session, ctx.budget);
    try {
      for (let done = 0; done < jobs; done += 1000) {
        const n = Math.min(1000, jobs - done);
        await producer.enqueueBatch(Array.from({ length: n }, (_, i) => ({ k: done + i + 1 })));
        ctx.progress.update(`${label}: preloading ${fmt(done + n)}/${fmt(jobs)}`);
      }
      const before = await settledStats(session.observer);
      await worker.start(session.url);
      const deadline = nowMs() + capS * 1000;
      const ticker = setInterval(() => ctx.progress.update(`${label}: ${fmt(worker.progress().succeeded)}/${fmt(jobs)} done`), 500);
      let pending = jobs;
      try {
        await worker.waitFor((p) => p.succeeded >= jobs, Math.max(0, deadline - nowMs()));
        for (;;) {
          pending = await producer.pending();
          if (pending === 0 || nowMs() >= deadline) break;
          await sleep(20);
        }
      } finally {
        clearInterval(ticker);
      }
      const endAt = nowMs();
      const after = await settledStats(session.observer);
      const burnRate = (jobs - pending) / ((endAt - worker.progress().firstStartAt) / 1000);
      if (pending > 0) {
        rows.note(session.variant.label, session.variant.id, `burn-down stopped at the ${capS} s cap (${fmt(jobs - pending)}/${fmt(jobs)} done)`);
        await worker.waitFor((p) => p.succeeded >= jobs, 60_000);
      }

      // Steady arrivals on the drained worker.
      const t0 = nowMs();
      const warm = t0 + 1000;
      const end = warm + windowS * 1000;
      let k = jobs + 1;
      let sent = 0;
      while (nowMs() < end) {
        const due = Math.floor((rate * (nowMs() - t0)) / 1000) - sent;
        if (due <= 0) {
          await sleep(5);
          continue;
        }
        const t = nowMs();
        const batch = Array.from({ length: Math.min(due, 1000) }, () => ({ k: k++, t }));
        await producer.enqueueBatch(batch);
        sent += batch.length;
        ctx.progress.update(`${label}: arrivals ${fmt(sent)} enqueued`);
      }
      const total = jobs + sent;
      const caughtUp = await worker.waitFor((p) => p.succeeded >= total, 15_000);
      // Enqueue and start stamps are on one clock (the worker's is ours: worker/protocol.ts).
      const start = await worker.latency(warm, end);
      if (!caughtUp) rows.note(session.variant.label, session.variant.id, `did not keep up with ${fmt(rate)} arrivals/s (latencies are of the jobs that ran)`);
      const summary = await worker.stop();
      if (summary.repeatedSuccesses > 0 || (caughtUp && summary.distinctSucceeded !== total)) {
        throw new Error(`${label}: expected ${total} jobs run once each; handlers ran ${summary.succeeded} (${summary.distinctSucceeded} distinct)`);
      }
      rows.add(session.variant.label, session.variant.id, {
        rate: burnRate,
        startP50: start.p50,
        startP99: start.p99,
        ...perJobValues(perJob(before, after, jobs - pending)),
      });
      details.push({
        variant: session.variant.id,
        run: run.index,
        jobs,
        pending,
        burnRate,
        arrivals: sent,
        latency: start,
        claims: summary.claims,
        info: summary.info,
      });
      ctx.progress.done(`${label}: burn-down ${fmt(burnRate)} jobs/s; at ${fmt(rate)}/s enqueue→start p50 ${fmt(start.p50, 1)} / p99 ${fmt(start.p99, 1)} ms`);
    } finally {
      await producer.close();
    }
  });
  const slots = slotsPerQueue(ctx.budget.concurrency);
  const queues = REALISTIC_QUEUES.map((q) => `${q.id} (${q.cap === null ? "uncapped" : `cap ${q.cap}`}, ${q.share}/8 of the jobs)`).join(", ");
  return {
    id: "i",
    title: "(i) realistic: several queues in one pool, two capped, three weighted tenants, jobs of 0–20 ms",
    notes: [
      `Workload, the same for every system: queues ${queues}; tenants ${REALISTIC_TENANTS.map((t) => `${t.id} (weight ${t.weight})`).join(", ")} with equal backlogs (job k → tenant k mod 3); handlers sleep 0, 1, 2, 5, 10 or 20 ms (half of them 0; mean ${fmt(meanDurationMs, 1)} ms, so ${ctx.budget.concurrency} slots cap any system at ≈ ${fmt((ctx.budget.concurrency * 1000) / meanDurationMs)} jobs/s). Queue, tenant and duration follow from the job's number.`,
      `jobs/s: burn-down of ${fmt(jobs)} jobs preloaded through each system's batch API (calls of 1000), ${capS} s cap; jobs ÷ (done in the system's tables − first handler start). enqueue→start: then ${fmt(rate)} arrivals/s (batches every 5 ms) on the same worker for ${windowS} s after a 1 s warm-up; start stamped by the handler. Every run checks each job ran once.`,
      "Porter: one pool, the four queues with their caps, one job type per queue, tenants with their weights (weighted fair share in the claim), an idempotency key per job; the pool's 24 slots are shared by all queues.",
      "graphile-worker tuned, without its local queue (with it, the capped queues' named-queue jobs ran at ~6/s: one per named queue per fetch, refetched at the 2 s poll), completeJobBatchDelay 0: a task per queue sharing its 24 concurrentJobs; it has no per-queue concurrency cap, so a capped queue's jobs are spread round-robin over `cap` named queues (queueName; each runs one job at a time, so at most `cap` run at once, but a job waits behind a long one in its named queue while the queue's other slots may be free); a job key per job (its nearest to Porter's idempotency key). No tenants: no weighted fair share — it runs in run_at/id order.",
      `pg-boss tuned: a queue per queue and one work() each, localConcurrency = the cap or a share of the remaining slots (${[...slots].map(([q, n]) => `${q} ${n}`).join(", ")}): pg-boss has no pool-wide slots nor cross-process cap, so slots are split statically; NOTIFY on, batches of 50 per local worker run one at a time, polling 0.5 s. No tenants: no weighted fair share. No idempotency key (singletonKey is a different contract).`,
      "The peers' default configurations do not run here.",
    ],
    columns: [
      { key: "rate", label: "jobs/s", better: "higher" },
      { key: "startP50", label: "enqueue→start p50 ms", digits: 1, better: "lower" },
      { key: "startP99", label: "enqueue→start p99 ms", digits: 1, better: "lower" },
      ...COST_COLUMNS,
    ],
    rows: rows.all(),
    details,
  };
};
