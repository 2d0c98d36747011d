import { type PgStats, perJob, settledStats } from "../database";
import type { Session } from "../systems/types";
import { fmt } from "../table";
import type { Variant } from "../variants";
import { distribution, nowMs } from "../worker/protocol";
import type { WorkerHandle } from "../worker/spawn";
import { type BenchContext, COST_COLUMNS, type Column, interleave, perJobValues, RowSet, runLabel, type ScenarioResult, sleep } from "./common";
import { DoneProbe } from "./done-probe";

const LATENCY_COLUMNS: Column[] = [
  { key: "startP50", label: "enqueue→start p50 ms", digits: 1, better: "lower" },
  { key: "startP99", label: "enqueue→start p99 ms", digits: 1, better: "lower" },
  { key: "doneP50", label: "enqueue→done p50 ms", digits: 1, better: "lower" },
  { key: "doneP99", label: "enqueue→done p99 ms", digits: 1, better: "lower" },
];

/** Per-job costs without the probe's own read-only commits. */
const costs = (before: PgStats, after: PgStats, jobs: number, probeQueries: number) =>
  perJobValues(perJob(before, { ...after, commits: after.commits - probeQueries }, jobs));

/** Starts the worker, lets it settle idle, and takes the statistics from there. */
const idleWorker = async (session: Session, worker: WorkerHandle): Promise<{ worker: WorkerHandle; before: PgStats }> => {
  await worker.start(session.url);
  await sleep(500);
  return { worker, before: await settledStats(session.observer) };
};

/**
 * The second load of (d): Porter's uncapped row and the fastest tuned peer are compared at the same
 * arrival rate, the slower one's maximum. Returns it for the faster of the two (undefined for every
 * other variant, and when either maximum is unknown).
 */
const sharedLoad = (ctx: BenchContext, id: string): { rate: number; of: string } | undefined => {
  const maxOf = (v: Variant) => ctx.maxRates.get(v.id) ?? 0;
  const porter = ctx.variants.find((v) => v.id === "porter");
  const [peer] = ctx.variants.filter((v) => v.tuned && v.system !== "porter").sort((a, b) => maxOf(b) - maxOf(a));
  if (!porter || !peer) return undefined;
  const [porterMax, peerMax] = [maxOf(porter), maxOf(peer)];
  if (porterMax === 0 || peerMax === 0) return undefined;
  if (id === porter.id && porterMax > peerMax) return { rate: peerMax, of: peer.label };
  if (id === peer.id && peerMax > porterMax) return { rate: porterMax, of: porter.label };
  return undefined;
};

/**
 * (d) Steady arrivals at 50% and 90% of each system's own maximum (its burn-down rate): a producer
 * enqueues batches every 5 ms at that rate for the window; the first quarter is warm-up. Start is
 * stamped by the handler; done is seen by polling the system's tables every 5 ms for ~100 tracked
 * jobs a second.
 */
export const steadyArrivals = async (ctx: BenchContext): Promise<ScenarioResult[]> => {
  const fractions = [0.5, 0.9];
  const rowSets = fractions.map(() => new RowSet());
  const windowS = ctx.sizes.steadySeconds;
  await interleave(ctx, ctx.variants, { runs: ctx.sizes.runs, worker: { kind: "noop" } }, async (session, run, booted) => {
    const max = ctx.maxRates.get(session.variant.id) ?? 100;
    // Porter and the fastest tuned peer also run at the same load: the faster of the two runs a
    // second time at the slower one's rate (the same fraction of it), which both can sustain.
    const shared = sharedLoad(ctx, session.variant.id);
    // Lightest load first, so that a load a system cannot sustain comes after the ones it can.
    const loads = fractions
      .flatMap((fraction, i) => [
        { i, fraction, rate: fraction * max, row: session.variant.label },
        ...(shared ? [{ i, fraction, rate: fraction * shared.rate, row: `${session.variant.label} at ${shared.of}'s rate` }] : []),
      ])
      .sort((a, b) => a.rate - b.rate);
    const started = await idleWorker(session, booted);
    const worker = started.worker;
    let before = started.before;
    let k = 1;
    try {
      for (const { i, fraction, rate, row } of loads) {
        const label = `(d) ${row} at ${fraction * 100}% (${fmt(rate)} jobs/s), ${runLabel(run, ctx.sizes.runs)}`;
        const probe = new DoneProbe(session);
        const stride = Math.max(1, Math.round(rate / 100));
        probe.start(5);
        const t0 = nowMs();
        // A warm-up of max(1 s, a quarter of the window) at the same rate precedes the measured window.
        const warm = t0 + Math.max(1000, (windowS * 1000) / 4);
        const end = warm + windowS * 1000;
        let sent = 0;
        const first = k;
        while (nowMs() < end) {
          const due = Math.floor((rate * (nowMs() - t0)) / 1000) - sent;
          if (due <= 0) {
            await sleep(5);
            continue;
          }
          const n = Math.min(due, 1000);
          const t = nowMs();
          const jobs = Array.from({ length: n }, () => ({ k: k++, t }));
          const ids = await session.enqueueBatch(jobs);
          jobs.forEach((j, x) => {
            if (j.k % stride === 0) probe.track(ids[x]!, t);
          });
          sent += n;
          ctx.progress.update(`${label}: ${fmt(sent)} enqueued, ${fmt(worker.progress().succeeded - (first - 1))} done`);
        }
        // A system that fell behind gets a while to catch up; what is still unstarted then is reported.
        const catchUpMs = Math.min(15_000, Math.max(2_000, windowS * 1000));
        const caughtUp = await worker.waitFor((p) => p.succeeded >= k - 1, catchUpMs);
        probe.stop();
        await probe.settle(5, 2_000);
        const after = await settledStats(session.observer);
        const start = await worker.latency(warm, end);
        const done = distribution(probe.latencies(warm, end));
        const behind = k - 1 - worker.progress().succeeded;
        if (!caughtUp && behind > 0) {
          rowSets[i]!.note(
            row,
            session.variant.id,
            `did not keep up: ${fmt(behind)} jobs not done ${fmt(catchUpMs / 1000)} s after the window (latencies are of those that ran)`,
          );
          // The next load starts from an empty queue, not from this one's backlog.
          await worker.waitFor((p) => p.succeeded >= k - 1, 60_000);
        }
        rowSets[i]!.add(row, session.variant.id, {
          arrivals: sent / ((end - t0) / 1000),
          startP50: start.p50,
          startP99: start.p99,
          doneP50: done.p50,
          doneP99: done.p99,
          ...costs(before, after, sent, probe.queries + 3),
        });
        ctx.progress.done(
          `${label}: start p50 ${fmt(start.p50, 1)} / p99 ${fmt(start.p99, 1)} ms, done p50 ${fmt(done.p50, 1)} / p99 ${fmt(done.p99, 1)} ms (${done.count} tracked)`,
        );
        before = after;
      }
    } finally {
      await worker.stop().catch(() => undefined);
    }
  });
  return fractions.map((fraction, i) => ({
    id: `d${fraction * 100}`,
    title: `(d) steady arrivals at ${fraction * 100}% of each system's own maximum`,
    notes: [
      `Rate = ${fraction * 100}% of the system's burn-down jobs/s from (c) (or a short burn-down when (c) did not run); a warm-up of max(1 s, window/4) at that rate, then a ${windowS} s measured window; batches every 5 ms through the batch API. The producer and the worker share the machine's cores, so a system loaded near its burn-down maximum may fall behind.`,
      "Porter and the fastest tuned peer also meet at the same load: whichever of the two has the higher maximum runs a second time at the other's rate (the same fraction of the other's maximum), a load both can sustain, for a like-for-like latency comparison.",
      "start = first handler start − enqueue call issued (all jobs); done = seen done in the system's tables (5 ms poll) − enqueue call issued (~100 tracked jobs/s). Per-job costs exclude the probe's queries.",
    ],
    columns: [{ key: "arrivals", label: "arrivals/s", better: "none" }, ...LATENCY_COLUMNS, ...COST_COLUMNS],
    rows: rowSets[i]!.all(),
    details: [],
  }));
};

/**
 * (e) Idle latency: an idle worker, single jobs enqueued one at a time (the next 20–50 ms after the
 * previous is seen done), until the sample count or the time cap.
 */
export const idleLatency = async (ctx: BenchContext): Promise<ScenarioResult> => {
  const rows = new RowSet();
  await interleave(ctx, ctx.variants, { runs: ctx.sizes.runs, worker: { kind: "noop" } }, async (session, run, booted) => {
    const label = `(e) ${session.variant.label}, ${runLabel(run, ctx.sizes.runs)}`;
    const { worker, before } = await idleWorker(session, booted);
    try {
      const probe = new DoneProbe(session);
      const t0 = nowMs();
      const end = t0 + ctx.sizes.idleCapS * 1000;
      let samples = 0;
      // The first sample wakes caches on every path; it is discarded.
      for (let k = 0; k <= ctx.sizes.idleSamples && nowMs() < end; k++) {
        const t = nowMs();
        probe.track(await session.enqueueOne({ k, t: k === 0 ? 0 : t }), k === 0 ? -t : t);
        await probe.settle(1, 10_000);
        if (k > 0) samples++;
        ctx.progress.update(`${label}: ${samples} samples`);
        await sleep(20 + Math.random() * 30);
      }
      await worker.waitFor((p) => p.succeeded >= samples + 1, 5_000);
      const after = await settledStats(session.observer);
      const start = await worker.latency(t0, nowMs());
      const done = distribution(probe.latencies(t0, nowMs()));
      rows.add(session.variant.label, session.variant.id, {
        samples,
        startP50: start.p50,
        startP99: start.p99,
        doneP50: done.p50,
        doneP99: done.p99,
        ...costs(before, after, samples + 1, probe.queries + 3),
      });
      ctx.progress.done(
        `${label}: start p50 ${fmt(start.p50, 1)} / p99 ${fmt(start.p99, 1)} ms, done p50 ${fmt(done.p50, 1)} / p99 ${fmt(done.p99, 1)} ms, ${samples} samples`,
      );
    } finally {
      await worker.stop().catch(() => undefined);
    }
  });
  return {
    id: "e",
    title: "(e) idle latency",
    notes: [
      `Up to ${ctx.sizes.idleSamples} samples or ${ctx.sizes.idleCapS} s per run (slow pollers get fewer); single enqueue call (Porter: core enqueueJobs); the first sample is discarded.`,
      "start = handler start − enqueue call issued; done = seen done by a 1 ms poll of the system's tables − enqueue call issued. Per-job costs include the idle worker's own polling and heartbeats, not the probe.",
    ],
    columns: [{ key: "samples", label: "samples", better: "none" }, ...LATENCY_COLUMNS, ...COST_COLUMNS],
    rows: rows.all(),
    details: [],
  };
};
