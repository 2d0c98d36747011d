import { perJob, settledStats } from "../database";
import { pgTicks } from "../pg-ticks";
import { StatementNotes, statementProfile } from "../statements";
import type { Session } from "../systems/types";
import { fmt, median } from "../table";
import type { VariantId } from "../variants";
import { nowMs, type WorkerSummary } from "../worker/protocol";
import type { WorkerHandle } from "../worker/spawn";
import { type BenchContext, COST_COLUMNS, interleave, isPeerDefault, perJobValues, RowSet, runLabel, type ScenarioResult, settle, sleep } from "./common";

/** Enqueues jobs k = from … from+count-1 in calls of `batch` through the system's batch API. */
const preload = async (session: Session, from: number, count: number, batch: number, onProgress: (done: number) => void) => {
  for (let done = 0; done < count; done += batch) {
    const n = Math.min(batch, count - done);
    await session.enqueueBatch(Array.from({ length: n }, (_, i) => ({ k: from + done + i })));
    onProgress(done + n);
  }
};

export type DrainResult = { done: number; capped: boolean; endAt: number; summary: WorkerSummary; info: Record<string, unknown> };

/**
 * Starts a worker on a preloaded queue and waits until the system reports every job done (its own
 * tables, polled every 20 ms once the handlers have run them all) or `capS` passes. Then stops the
 * worker the way its library recommends.
 */
export const drainWith = async (
  session: Session,
  worker: WorkerHandle,
  ctx: BenchContext,
  params: { jobs: number; capS: number; label: string },
): Promise<DrainResult> => {
  try {
    const { at, info } = await worker.start(session.url);
    const deadline = at + params.capS * 1000;
    const ticker = setInterval(() => {
      const p = worker.progress();
      ctx.progress.update(`${params.label}: ${fmt(p.succeeded)}/${fmt(params.jobs)} done, ${fmt(p.failed)} failed attempts`);
    }, 500);
    let pending = params.jobs;
    try {
      await worker.waitFor((p) => p.succeeded >= params.jobs, Math.max(0, deadline - nowMs()));
      for (;;) {
        pending = await session.pending();
        if (pending === 0 || nowMs() >= deadline) break;
        await sleep(20);
      }
    } finally {
      clearInterval(ticker);
    }
    const endAt = nowMs();
    const summary = await worker.stop();
    return { done: params.jobs - pending, capped: pending > 0, endAt, summary, info: { ...info, ...summary.info } };
  } finally {
    worker.kill();
  }
};

/**
 * (c) Burn-down: N no-op jobs generated straight into the system's tables (as in (f): the enqueue
 * path is (a)'s subject), then one worker process with the shared concurrency drains them. Rate =
 * jobs ÷ (last job done in the system's tables − first job started). The peers' default
 * configurations get fewer jobs and a short cap, and report the rate they reached.
 */
export const burnDown = async (ctx: BenchContext): Promise<ScenarioResult> => {
  const rows = new RowSet();
  const details: unknown[] = [];
  const rates = new Map<VariantId, number[]>();
  const statementNotes = new StatementNotes();
  await interleave(ctx, ctx.variants, { runs: ctx.sizes.runs, worker: { kind: "noop" } }, async (session, run, worker) => {
    const label = `(c) ${session.variant.label}, ${runLabel(run, ctx.sizes.runs)}`;
    const isDefault = isPeerDefault(session.variant);
    const jobs = isDefault ? Math.min(ctx.sizes.burnDownJobs, 20_000) : ctx.sizes.burnDownJobs;
    const capS = isDefault ? ctx.sizes.defaultCapS : ctx.sizes.burnDownCapS;
    ctx.progress.update(`${label}: generating ${fmt(jobs)} jobs…`);
    await session.generate("ready", 1, jobs);
    ctx.progress.update(`${label}: VACUUM ANALYZE and CHECKPOINT after the generation…`);
    await settle(session);
    const before = await settledStats(session.observer);
    const statements = isDefault ? null : await statementProfile(session.observer);
    const pgTicksBefore = pgTicks();
    const r = await drainWith(session, worker, ctx, { jobs, capS, label });
    const pgCpuMs = (pgTicks() - pgTicksBefore) * 10;
    const after = await settledStats(session.observer);
    const elapsedS = (r.endAt - r.summary.firstStartAt) / 1000;
    const rate = r.done / elapsedS;
    const inDb = await session.succeededInDb();
    // Every job ran once (no job twice, even when capped), and uncapped: all ran and the system recorded them.
    const isOnce = r.summary.repeatedSuccesses === 0 && r.summary.distinctSucceeded === r.summary.succeeded;
    const isAll = r.capped || (r.summary.succeeded === jobs && (inDb === null || inDb === jobs));
    if (!isOnce || !isAll) {
      throw new Error(
        `${label}: expected ${jobs} jobs run once each; handlers ran ${r.summary.succeeded} (${r.summary.distinctSucceeded} distinct), the database holds ${inDb} succeeded`,
      );
    }
    if (r.capped) rows.note(session.variant.label, session.variant.id, `stopped at the ${capS} s cap (${fmt(r.done)}/${fmt(jobs)} done)`);
    const claims = r.summary.claims;
    rows.add(session.variant.label, session.variant.id, {
      rate,
      perClaim: claims.claims ? claims.rows / claims.claims : NaN,
      claimP50: claims.latency.p50,
      workerCpu: (r.summary.cpuMs * 1000) / r.done,
      pgCpu: pgCpuMs > 0 ? (pgCpuMs * 1000) / r.done : NaN,
      ...perJobValues(perJob(before, after, r.done)),
    });
    if (statements) {
      const top = await statements.top(3);
      statementNotes.add(session.variant.label, top, r.done);
      details.push({ variant: session.variant.id, run: run.index, statements: top });
    }
    (rates.get(session.variant.id) ?? rates.set(session.variant.id, []).get(session.variant.id)!).push(rate);
    details.push({
      variant: session.variant.id,
      run: run.index,
      jobs,
      done: r.done,
      capped: r.capped,
      rate,
      handlerRuns: r.summary.executed,
      succeededInDb: inDb,
      claims,
      info: r.info,
    });
    ctx.progress.done(
      `${label}: ${fmt(rate)} jobs/s${r.capped ? ` (capped at ${capS} s, ${fmt(r.done)} done)` : ""}, ${fmt(claims.claims)} claims of ${fmt(claims.rows / Math.max(1, claims.claims), 1)} jobs`,
    );
  });
  for (const [id, list] of rates) ctx.maxRates.set(id, median(list));
  const full = 200_000;
  return {
    id: "c",
    title: "(c) burn-down",
    ratioCaveat:
      ctx.sizes.burnDownJobs < full || ctx.sizes.runs < 3
        ? `Not full mode (${fmt(ctx.sizes.burnDownJobs)} jobs, ${ctx.sizes.runs} run(s); full: ${fmt(full)} jobs, 3 runs): quote full mode's ratios. Since each backlog is settled before its drain (VACUUM ANALYZE, CHECKPOINT), quick mode's ratios came within 20% of full mode's in 8 of the 9 comparisons measured on 2026-12-04 (docs/performance.md, "Quick mode against full mode, settled"): Porter ÷ graphile-worker tuned 0.76×, 0.82× and 0.91× in three quick runs against 0.74× in full mode (the third 1.23× of it); Porter ÷ pg-boss tuned 1.26–1.29× against 1.28×; the policy path ÷ Porter 0.92–1.01× against 0.90×. One run of ${fmt(ctx.sizes.burnDownJobs)} jobs swings ±10% with the machine's load, where full mode takes the median of three. Before the settle, quick mode understated Porter against graphile-worker by up to half.`
        : undefined,
    notes: [
      `${fmt(ctx.sizes.burnDownJobs)} no-op jobs generated into each system's own tables (INSERT … SELECT, cloned from a job it stored), then VACUUM ANALYZE and a CHECKPOINT (as in (f): autovacuum's first pass and the checkpoint the generation starts would otherwise land in some drains and not others), drained by one worker process: ${ctx.budget.concurrency} jobs at once, ${ctx.budget.connections} pool connections; cap ${ctx.sizes.burnDownCapS} s. The peers' default configurations: ${fmt(Math.min(ctx.sizes.burnDownJobs, 20_000))} jobs, ${ctx.sizes.defaultCapS} s cap, rate over what they did.`,
      "jobs/s = jobs ÷ (done as the system's own tables show − first handler start). Every run checks each job ran exactly once and the system recorded all of them done.",
      "jobs/claim and claim p50 come from timing each system's claim statement at the driver (Porter: its whole claim transaction).",
      "CPU per job: the worker process's own (user + system, start to stop), and PostgreSQL's — every postgres process on this machine over the drain, so other databases' work on the server counts too.",
      ...(statementNotes.size > 0
        ? statementNotes.notes()
        : ["Statement profile: not available (the server does not load pg_stat_statements; set shared_preload_libraries = 'pg_stat_statements' to get it)."]),
    ],
    columns: [
      { key: "rate", label: "jobs/s", better: "higher" },
      { key: "perClaim", label: "jobs/claim", digits: 1, better: "none" },
      { key: "claimP50", label: "claim p50 ms", digits: 2, better: "none" },
      { key: "workerCpu", label: "worker CPU µs/job", digits: 1, better: "lower" },
      { key: "pgCpu", label: "PostgreSQL CPU µs/job", digits: 1, better: "lower" },
      ...COST_COLUMNS,
    ],
    rows: rows.all(),
    details,
  };
};

/** Each variant's maximum when (c) did not run: one short burn-down (20k jobs, 10 s cap) per variant. */
export const estimateMaxRates = async (ctx: BenchContext): Promise<void> => {
  const missing = ctx.variants.filter((v) => !ctx.maxRates.has(v.id));
  await interleave(ctx, missing, { runs: 1, worker: { kind: "noop" } }, async (session, _run, worker) => {
    const label = `max of ${session.variant.label}`;
    const jobs = 20_000;
    await session.generate("ready", 1, jobs);
    await settle(session);
    const r = await drainWith(session, worker, ctx, { jobs, capS: 10, label });
    const rate = r.done / ((r.endAt - r.summary.firstStartAt) / 1000);
    ctx.maxRates.set(session.variant.id, rate);
    ctx.progress.done(`${label}: ${fmt(rate)} jobs/s`);
  });
};

/** The bench's one warm-up pass (discarded): each variant enqueues 3k jobs in batches and 50 one by one, and drains them. */
export const warmUp = async (ctx: BenchContext): Promise<void> => {
  await interleave(ctx, ctx.variants, { runs: 1, worker: { kind: "noop" } }, async (session, _run, worker) => {
    const label = `warm-up ${session.variant.label}`;
    await preload(session, 1, 3000, 1000, (d) => ctx.progress.update(`${label}: preloading ${fmt(d)}`));
    for (let k = 3001; k <= 3050; k++) await session.enqueueOne({ k });
    await drainWith(session, worker, ctx, { jobs: 3050, capS: 4, label });
  });
  ctx.progress.done("warm-up pass done (discarded)");
};
