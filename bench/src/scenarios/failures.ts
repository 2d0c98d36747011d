import { perJob, settledStats } from "../database";
import { readEffects } from "../systems/types";
import { fmt } from "../table";
import { drainWith, preload } from "./burn-down";
import type { Variant } from "../variants";
import type { HandlerMode } from "../worker/protocol";
import { COST_COLUMNS, interleave, perJobValues, RowSet, runLabel, type BenchContext, type ScenarioResult } from "./common";

const FAIL_PERCENT = 10;

/**
 * (g) 10% transient failures: jobs preloaded, then a worker whose handler fails 10% of attempts
 * (the same attempts for every system: a hash of job and attempt) before doing anything, and on
 * success applies one effect — a row in `bench_effects` incremented per application (Porter:
 * through ctx.effect, its effect ledger; the peers: a plain write on their own pool). Lost =
 * jobs whose effect never applied; duplicated = jobs whose effect applied more than once.
 */
export const failures = async (ctx: BenchContext): Promise<ScenarioResult> => {
  const rows = new RowSet();
  const details: unknown[] = [];
  // Porter runs twice: with its effect ledger (ctx.effect) and with a plain write as the peers do.
  const cases = ctx.variants.flatMap((v) =>
    v.system === "porter" ? [{ ...v, label: `${v.label} (ctx.effect)` }, { ...v, label: `${v.label} (plain write)` }] : [v],
  );
  const handler = (v: Variant): HandlerMode => ({ kind: "faulty", failPercent: FAIL_PERCENT, effect: v.label.endsWith("(ctx.effect)") ? "ledger" : "plain" });
  await interleave(ctx, cases, { runs: ctx.sizes.runs, warmup: ctx.sizes.warmups, worker: handler }, async (session, run, worker) => {
    const name = session.variant.label;
    const label = `(g) ${name}, ${runLabel(run, ctx.sizes.runs)}`;
    // Each configuration gets as many jobs as it runs in failureTargetS at its (c) rate.
    const byRate = Math.round((ctx.maxRates.get(session.variant.id) ?? Infinity) * ctx.sizes.failureTargetS);
    const full = Math.max(200, Math.min(ctx.sizes.failureJobs, byRate));
    const jobs = run.isWarmup ? Math.max(200, Math.floor(full / 5)) : full;
    await preload(session, 1, jobs, 1000, (d) => ctx.progress.update(`${label}: preloading ${fmt(d)}/${fmt(jobs)}`));
    const before = await settledStats(session.observer);
    const r = await drainWith(session, worker, ctx, { jobs, capS: ctx.sizes.failureCapS, label });
    const after = await settledStats(session.observer);
    const effects = await readEffects(session.observer);
    // At the cap, only jobs the system already reports done can count as lost.
    const lost = Math.max(0, r.done - effects.applied);
    const allDoneS = (r.endAt - r.summary.firstStartAt) / 1000;
    const rate = effects.applied / allDoneS;
    if (r.capped) rows.note(name, session.variant.id, `stopped at the ${ctx.sizes.failureCapS} s cap (${fmt(r.done)}/${fmt(jobs)} done)`, run.isWarmup);
    rows.add(
      name,
      session.variant.id,
      {
        jobs,
        rate,
        allDoneS,
        lost,
        duplicated: effects.duplicated,
        repeated: r.summary.repeatedSuccesses,
        attempts: r.summary.executed / jobs,
        ...perJobValues(perJob(before, after, jobs)),
      },
      run.isWarmup,
    );
    details.push({ variant: name, run: run.index, jobs, done: r.done, capped: r.capped, effects, summary: r.summary, info: r.info });
    ctx.progress.done(
      `${label}: ${fmt(rate)} effective jobs/s, lost ${lost}, duplicated ${effects.duplicated}, ${fmt(r.summary.executed / jobs, 3)} attempts/job${r.capped ? ` (capped, ${fmt(r.done)}/${fmt(jobs)} done)` : ""}`,
    );
  });
  return {
    id: "g",
    title: "(g) 10% transient failures",
    notes: [
      `10% of the jobs (the same ones everywhere) fail their first attempt with a transient error before doing anything, then succeed. Jobs per run: ~${ctx.sizes.failureTargetS} s of the system's (c) rate, at most ${fmt(ctx.sizes.failureJobs)}; cap ${ctx.sizes.failureCapS} s. Max attempts 25 everywhere.`,
      "effective jobs/s = jobs whose effect applied ÷ all done s (last job done as the system's tables show − first start), so it includes one retry delay, each system's own: Porter full-jitter backoff from 1 s (queue default), graphile-worker exp(1) ≈ 2.7 s (fixed), pg-boss retryDelay 1 s.",
      "Effect: a row incremented per application in the system's own database — Porter (ctx.effect) through its effect ledger (one transaction with the ledger row, lease checked), Porter (plain write) and the peers as one INSERT … ON CONFLICT on the worker's pool.",
      "lost = jobs without their effect when the system says all are done; duplicated = effects applied twice; re-run after success = jobs whose handler succeeded twice (the ledger absorbs the effect; a plain write would duplicate it).",
    ],
    columns: [
      { key: "jobs", label: "jobs", better: "none" },
      { key: "rate", label: "effective jobs/s", better: "higher" },
      { key: "allDoneS", label: "all done s", digits: 1, better: "none" },
      { key: "lost", label: "lost", better: "none" },
      { key: "duplicated", label: "duplicated", better: "none" },
      { key: "repeated", label: "re-run after success", better: "none" },
      { key: "attempts", label: "attempts/job", digits: 3, better: "none" },
      ...COST_COLUMNS,
    ],
    rows: rows.all(),
    details,
  };
};
