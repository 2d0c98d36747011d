import { perJob, settledStats } from "../database";
import { FULL } from "../options";
import { pgTicks } from "../pg-ticks";
import { StatementNotes, statementProfile } from "../statements";
import { readEffects } from "../systems/types";
import { fmt } from "../table";
import type { Variant } from "../variants";
import type { EffectMode, HandlerMode } from "../worker/protocol";
import { drainWith } from "./burn-down";
import { type BenchContext, COST_COLUMNS, interleave, perJobValues, RowSet, runLabel, type ScenarioResult, settle } from "./common";

const FAIL_PERCENT = 10;

/**
 * (g) 10% transient failures: jobs generated into the system's tables, then a worker whose handler
 * fails the first attempt of 10% of the jobs (the same jobs for every system: a hash of the job
 * number) before doing anything, and on success applies one effect — a row in `bench_effects`
 * incremented per application (Porter with ctx.effect, its ledger, and with a plain write; the
 * peers with a plain write on their own pool). Lost = jobs whose effect never applied; duplicated
 * = jobs whose effect applied more than once.
 */
export const failures = async (ctx: BenchContext): Promise<ScenarioResult> => {
  const rows = new RowSet();
  const details: unknown[] = [];
  const statementNotes = new StatementNotes();
  // Porter runs four times: with a plain write as the peers do — first, so that the report gives
  // each ctx.effect row ÷ the plain write (the target: ≥ 0.8×) — and with its effect ledger: the
  // effect as one statement (one message), as a function with { txOnly: true }, and as a function
  // by default.
  const cases = ctx.variants.flatMap((v) =>
    v.system === "porter"
      ? [
          { ...v, label: `${v.label} (plain write)` },
          { ...v, label: `${v.label} (ctx.effect, statement)` },
          { ...v, label: `${v.label} (ctx.effect, txOnly)` },
          { ...v, label: `${v.label} (ctx.effect)` },
        ]
      : [v],
  );
  const effectOf = (label: string): EffectMode =>
    label.endsWith("(ctx.effect)")
      ? "ledger"
      : label.endsWith("(ctx.effect, txOnly)")
        ? "ledger-tx-only"
        : label.endsWith("(ctx.effect, statement)")
          ? "ledger-statement"
          : "plain";
  const handler = (v: Variant): HandlerMode => ({ kind: "faulty", failPercent: FAIL_PERCENT, effect: effectOf(v.label) });
  await interleave(ctx, cases, { runs: ctx.sizes.runs, worker: handler }, async (session, run, worker) => {
    const name = session.variant.label;
    const label = `(g) ${name}, ${runLabel(run, ctx.sizes.runs)}`;
    // Fixed, or fewer for a configuration whose (c) rate would not run them in failureTargetS.
    const byRate = Math.round((ctx.maxRates.get(session.variant.id) ?? Infinity) * ctx.sizes.failureTargetS);
    const full = Math.max(200, Math.min(ctx.sizes.failureJobs, byRate));
    const jobs = full;
    ctx.progress.update(`${label}: generating ${fmt(jobs)} jobs…`);
    await session.generate("ready", 1, jobs);
    await settle(session);
    const before = await settledStats(session.observer);
    const statements = session.variant.system === "porter" ? await statementProfile(session.observer) : null;
    const pgTicksBefore = pgTicks();
    const r = await drainWith(session, worker, ctx, { jobs, capS: ctx.sizes.failureCapS, label });
    const pgCpuMs = (pgTicks() - pgTicksBefore) * 10;
    const after = await settledStats(session.observer);
    if (statements) statementNotes.add(name, await statements.top(3), jobs);
    const effects = await readEffects(session.observer);
    // At the cap, only jobs the system already reports done can count as lost.
    const lost = Math.max(0, r.done - effects.applied);
    const allDoneS = (r.endAt - r.summary.firstStartAt) / 1000;
    const rate = effects.applied / allDoneS;
    if (r.capped) rows.note(name, session.variant.id, `stopped at the ${ctx.sizes.failureCapS} s cap (${fmt(r.done)}/${fmt(jobs)} done)`);
    rows.add(name, session.variant.id, {
      jobs,
      rate,
      allDoneS,
      lost,
      duplicated: effects.duplicated,
      repeated: r.summary.repeatedSuccesses,
      attempts: r.summary.executed / jobs,
      workerCpu: (r.summary.cpuMs * 1000) / jobs,
      pgCpu: pgCpuMs > 0 ? (pgCpuMs * 1000) / jobs : Number.NaN,
      ...perJobValues(perJob(before, after, jobs)),
    });
    details.push({ variant: name, run: run.index, jobs, done: r.done, capped: r.capped, effects, summary: r.summary, info: r.info });
    ctx.progress.done(
      `${label}: ${fmt(rate)} effective jobs/s, lost ${lost}, duplicated ${effects.duplicated}, ${fmt(r.summary.executed / jobs, 3)} attempts/job${r.capped ? ` (capped, ${fmt(r.done)}/${fmt(jobs)} done)` : ""}`,
    );
  });
  return {
    id: "g",
    title: "(g) 10% transient failures",
    porterBase: cases.find((c) => c.system === "porter" && effectOf(c.label) === "plain")?.label,
    ratioCaveat:
      ctx.sizes.failureJobs < FULL.failureJobs
        ? `Not full mode (${fmt(ctx.sizes.failureJobs)} jobs a run; full: ${fmt(FULL.failureJobs)}): these ratios do not agree with full mode's — quote full mode's. A run's "all done" includes one retry delay (Porter's up to 1 s), a larger share of a short run, which pulls every ratio towards 1: quick mode put ctx.effect at 0.85× (txOnly) and 0.86× (default) of the plain write on 2026-12-03, where the full run of the fifth stop had 0.61× and 0.61× (docs/performance.md, "One statement, one message").`
        : undefined,
    notes: [
      `Each run's jobs are generated, then VACUUM ANALYZE and a CHECKPOINT (as in (c)). 10% of the jobs (the same ones everywhere) fail their first attempt with a transient error before doing anything, then succeed. ${fmt(ctx.sizes.failureJobs)} jobs per run (fewer for a configuration whose (c) rate is below ${fmt(ctx.sizes.failureJobs / ctx.sizes.failureTargetS)}/s: ${ctx.sizes.failureTargetS} s of it); cap ${ctx.sizes.failureCapS} s. Max attempts 25 everywhere.`,
      "effective jobs/s = jobs whose effect applied ÷ all done s (last job done as the system's tables show − first start), so it includes one retry delay, each system's own: Porter full-jitter backoff from 1 s (queue default), graphile-worker exp(1) ≈ 2.7 s (fixed), pg-boss retryDelay 1 s.",
      "Effect: a row incremented per application in the system's own database — Porter (ctx.effect) through its effect ledger (one transaction with the ledger row, lease checked, the key claimed before fn runs), Porter (ctx.effect, txOnly) the same with { txOnly: true } (fn only writes through tx: it runs first and the key is claimed in the commit message), Porter (ctx.effect, statement) the same INSERT given as ctx.effect(key, { text, values }) (the statement, the lease check and the ledger row in one message: one round trip), Porter (plain write) and the peers as one INSERT … ON CONFLICT on the worker's pool.",
      "lost = jobs without their effect when the system says all are done; duplicated = effects applied twice; re-run after success = jobs whose handler succeeded twice (the ledger absorbs the effect; a plain write would duplicate it).",
      "CPU per job: the worker process's own and PostgreSQL's (every postgres process on this machine) over the drain.",
      ...statementNotes.notes(),
    ],
    columns: [
      { key: "jobs", label: "jobs", better: "none" },
      { key: "rate", label: "effective jobs/s", better: "higher" },
      { key: "allDoneS", label: "all done s", digits: 1, better: "none" },
      { key: "lost", label: "lost", better: "none" },
      { key: "duplicated", label: "duplicated", better: "none" },
      { key: "repeated", label: "re-run after success", better: "none" },
      { key: "attempts", label: "attempts/job", digits: 3, better: "none" },
      { key: "workerCpu", label: "worker CPU µs/job", digits: 1, better: "lower" },
      { key: "pgCpu", label: "PostgreSQL CPU µs/job", digits: 1, better: "lower" },
      ...COST_COLUMNS,
    ],
    rows: rows.all(),
    details,
  };
};
