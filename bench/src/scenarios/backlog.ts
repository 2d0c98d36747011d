import { perJob, settledStats } from "../database";
import type { Session } from "../systems/types";
import { fmt, median } from "../table";
import { distribution, nowMs } from "../worker/protocol";
import type { WorkerHandle } from "../worker/spawn";
import { type BenchContext, bootWorker, COST_COLUMNS, interleave, perJobValues, RowSet, type ScenarioResult, settle } from "./common";

type Phase = { key: string; label: string };

/** Claims of a fresh worker process discarded as warm-up (first plans and connections). */
const COLD_CLAIMS = 2;

/**
 * Lets a worker process claim `window` jobs from the backlog. Returns claim timings (without the
 * first two, cold), jobs/s (first handler start to last handler end) and per-job costs.
 */
const measurePhase = async (session: Session, ctx: BenchContext, booting: Promise<WorkerHandle>, window: number, label: string, isCosted: boolean) => {
  const [worker, before] = await Promise.all([booting, isCosted ? settledStats(session.observer) : undefined]);
  try {
    const ticker = setInterval(() => ctx.progress.update(`${label}: ${fmt(worker.progress().succeeded)}/${fmt(window)} jobs`), 500);
    await worker.start(session.url);
    const reached = await worker.waitFor((p) => p.succeeded >= window, 120_000);
    const claims = await worker.claims(COLD_CLAIMS);
    clearInterval(ticker);
    const summary = await worker.stop();
    const rate = summary.succeeded / ((summary.lastEndAt - summary.firstStartAt) / 1000);
    if (!reached) throw new Error(`${label}: only ${summary.succeeded} of ${window} jobs ran in 120 s`);
    const cost = before ? perJobValues(perJob(before, await settledStats(session.observer), summary.succeeded)) : {};
    return { claims, rate, cost };
  } finally {
    worker.kill();
  }
};

/**
 * (f) Claim latency against a deep backlog: each system's best configuration (Porter, the peers
 * tuned) on its own database; ready jobs (and then finished ones) are generated with INSERT …
 * SELECT generate_series straight into the system's own tables, then VACUUM ANALYZE and CHECKPOINT
 * (`settle`). Claims are timed at the driver while a worker drains a window.
 */
export const backlog = async (ctx: BenchContext): Promise<ScenarioResult[]> => {
  const { backlogSmall: small, backlogLarge: large, backlogWindow: window, backlogDrains: drains } = ctx.sizes;
  const phases: Phase[] = [
    { key: "small", label: `${fmt(small / 1000)}k ready` },
    { key: "large", label: `${fmt(large / 1000)}k ready` },
    { key: "retained", label: `${fmt(large / 1000)}k ready + ${fmt(large / 1000)}k finished` },
  ];
  const latency = new RowSet();
  const flow = new RowSet();
  const variants = ctx.variants.filter((v) => v.system === "porter" || v.tuned);
  await interleave(ctx, variants, { runs: 1 }, async (session) => {
    const name = session.variant.label;
    const gen = async (kind: "ready" | "finished", from: number, count: number, what: string) => {
      ctx.progress.update(`(f) ${name}: generating ${fmt(count)} ${what}…`);
      const t0 = nowMs();
      const ok = await session.generate(kind, from, count);
      if (ok) await settle(session);
      ctx.progress.done(`(f) ${name}: ${ok ? `${fmt(count)} ${what} generated in ${fmt((nowMs() - t0) / 1000, 1)} s` : `keeps no ${what}`}`);
      return ok;
    };
    const values: Record<string, number> = {};
    const flowValues: Record<string, number> = {};
    // The next ready job's number: each drain after a phase's first tops the backlog up by a window.
    let nextReady = 1;
    const ready = async (count: number, what: string) => {
      await gen("ready", nextReady, count, what);
      nextReady += count;
    };
    for (const phase of phases) {
      const samples: number[] = [];
      const rates: number[] = [];
      let claimed = 0;
      for (let drain = 0; drain < drains; drain++) {
        // The drain's worker process boots while rows are generated.
        const booting = bootWorker(ctx, session.variant, { kind: "noop" });
        booting.catch(() => undefined);
        if (drain > 0) await ready(window, "ready jobs (the drained window again)");
        else if (phase.key === "small") await ready(small + window, "ready jobs");
        else if (phase.key === "large") await ready(large + window - small, "ready jobs");
        else if (!(await gen("finished", 10_000_001, large, "finished rows"))) {
          latency.note(name, session.variant.id, "deletes jobs when they succeed: nothing is retained, the last column repeats the backlog without it");
        }
        const label = `(f) ${name}, ${phase.label}${drains > 1 ? `, drain ${drain + 1}/${drains}` : ""}`;
        const m = await measurePhase(session, ctx, booting, window, label, phase.key === "large" && drain === 0);
        samples.push(...m.claims.samples);
        claimed += m.claims.rows;
        rates.push(m.rate);
        if (phase.key === "large" && drain === 0) Object.assign(flowValues, m.cost);
      }
      const pooled = distribution(samples);
      values[`p50${phase.key}`] = pooled.p50;
      values[`p99${phase.key}`] = pooled.p99;
      flowValues[`rate${phase.key}`] = median(rates);
      flowValues[`per${phase.key}`] = samples.length ? claimed / samples.length : NaN;
      ctx.progress.done(
        `(f) ${name}, ${phase.label}: claim p50 ${fmt(pooled.p50, 2)} / p99 ${fmt(pooled.p99, 2)} ms over ${samples.length} claims of ${fmt(flowValues[`per${phase.key}`]!, 1)} (${drains} drain${drains > 1 ? "s" : ""}), ${fmt(flowValues[`rate${phase.key}`]!)} jobs/s`,
      );
    }
    values.growth = values.p99large! / values.p99small!;
    latency.add(name, session.variant.id, values);
    flow.add(name, session.variant.id, flowValues);
  });
  const [a, b, c] = phases.map((p) => p.label) as [string, string, string];
  const notes = [
    `One run per system (the generation dominates): ${fmt(small + window)} ready jobs, then ${fmt(large + window)}, then ${fmt(large)} finished rows more, each generation followed by VACUUM ANALYZE and a CHECKPOINT (so that no phase drains during the checkpoint the generation's WAL starts); each phase drains a window of ${fmt(window)} jobs with a fresh worker process, whose first ${COLD_CLAIMS} claims are a discarded warm-up${drains > 1 ? `, ${drains} times (the window generated again before each drain after the first): the percentiles are of the drains' claims pooled, jobs/s their median, per-job costs the first drain's` : ""}.`,
    "A claim is timed at the driver from dispatch to result (Porter: its claim call); batches differ by design (graphile-worker and pg-boss tuned fetch up to 500 at a time, Porter claims its free slots plus an adaptive prefetch that grows with the start rate, up to 1000), so compare growth with backlog as much as absolute figures.",
  ];
  return [
    {
      id: "f",
      title: "(f) claim latency against a deep backlog",
      notes,
      columns: [
        { key: "p50small", label: `p50 ms @${a}`, digits: 2, better: "lower" },
        { key: "p99small", label: `p99 ms @${a}`, digits: 2, better: "lower" },
        { key: "p50large", label: `p50 ms @${b}`, digits: 2, better: "lower" },
        { key: "p99large", label: `p99 ms @${b}`, digits: 2, better: "lower" },
        { key: "growth", label: `p99 ${b} ÷ ${a}`, digits: 2, better: "lower" },
        { key: "p50retained", label: `p50 ms @${c}`, digits: 2, better: "lower" },
        { key: "p99retained", label: `p99 ms @${c}`, digits: 2, better: "lower" },
      ],
      rows: latency.all(),
      details: [],
    },
    {
      id: "f-flow",
      title: "(f) throughput against a deep backlog",
      notes: [`Per-job costs are those of the ${b} phase.`],
      columns: [
        { key: "ratesmall", label: `jobs/s @${a}`, better: "higher" },
        { key: "ratelarge", label: `jobs/s @${b}`, better: "higher" },
        { key: "rateretained", label: `jobs/s @${c}`, better: "higher" },
        { key: "perlarge", label: `jobs/claim @${b}`, digits: 1, better: "none" },
        ...COST_COLUMNS,
      ],
      rows: flow.all(),
      details: [],
    },
  ];
};
