import { type PerJob, perJob, settledStats } from "../database";
import { pgTicks } from "../pg-ticks";
import { StatementNotes, statementProfile } from "../statements";
import type { BenchJob, Session } from "../systems/types";
import { fmt } from "../table";
import type { Variant } from "../variants";
import { distribution, nowMs } from "../worker/protocol";
import { type BenchContext, COST_COLUMNS, interleave, perJobValues, RowSet, runLabel, type ScenarioResult } from "./common";

type Producer = {
  label: string;
  enqueueBatch: (jobs: BenchJob[]) => Promise<string[]>;
  enqueueOne: (job: BenchJob) => Promise<string>;
  /** The CPU of the process serving the calls, when it is not this one (Porter's HTTP API). */
  serverCpuMs?: () => number;
};

/** One variant per distinct enqueue path (graphile-worker's tuning is worker-side: one row for both). */
const enqueueVariants = (variants: readonly Variant[]): Variant[] => {
  const seen = new Set<string>();
  return variants.filter((v) => !seen.has(v.enqueueKey) && seen.add(v.enqueueKey));
};

const rowLabel = (variant: Variant, all: readonly Variant[]): string => {
  const same = all.filter((v) => v.enqueueKey === variant.enqueueKey);
  return same.length > 1
    ? `${variant.system === "graphile" ? "graphile-worker" : variant.system} (${same.map((v) => (v.tuned ? "tuned" : "default")).join(" = ")})`
    : variant.label;
};

/** The producers of a session: the direct API, and for Porter also the HTTP API. */
const producersOf = async (session: Session): Promise<Producer[]> => {
  const direct: Producer = { label: "direct", enqueueBatch: session.enqueueBatch, enqueueOne: session.enqueueOne };
  if (!session.http) return [direct];
  const http = await session.http();
  return [direct, { label: "HTTP", ...http }];
};

/**
 * The batch producers of (a): `producersOf`, and for graphile-worker also its batch call with a
 * `jobKey` per job (the deduplication Porter's producers always get). Not in (b): it runs for a
 * fixed time per level, and one more row there would add a minute to a full run.
 */
const batchProducersOf = async (session: Session): Promise<Array<Pick<Producer, "label" | "enqueueBatch" | "serverCpuMs">>> => [
  ...(await producersOf(session)),
  ...(session.keyedBatch ? [{ label: "jobKey", enqueueBatch: session.keyedBatch }] : []),
];

/** A producer's row: Porter's HTTP API and graphile-worker's keyed calls are rows of their own. */
const producerLabel = (producer: Pick<Producer, "label">, session: Session, all: readonly Variant[]): string =>
  producer.label === "HTTP"
    ? "porter (HTTP API)"
    : producer.label === "jobKey"
      ? `${rowLabel(session.variant, all)}, jobKey per job`
      : rowLabel(session.variant, all);

/** Runs one phase; with `isCosted`, also its per-job costs (statistics settled before and after). */
const phase = async (session: Session, isCosted: boolean, fn: () => Promise<number>): Promise<PerJob | undefined> => {
  const before = isCosted ? await settledStats(session.observer) : undefined;
  const jobs = await fn();
  return before ? perJob(before, await settledStats(session.observer), jobs) : undefined;
};

/**
 * (a) Batch enqueue: N jobs in sequential calls of 100, then of 1000, through each system's batch
 * API (Porter: direct, and over HTTP). Per-job costs are those of the 1000-per-call phase.
 */
export const batchEnqueue = async (ctx: BenchContext): Promise<ScenarioResult> => {
  const rows = new RowSet();
  const variants = enqueueVariants(ctx.variants);
  const jobsAt = (size: number) => (size === 1000 ? ctx.sizes.enqueueJobsLarge : ctx.sizes.enqueueJobs);
  const statementNotes = new StatementNotes();
  await interleave(ctx, variants, { runs: ctx.sizes.runs }, async (session, run) => {
    let k = 1;
    let isFirst = true;
    for (const producer of await batchProducersOf(session)) {
      // Each producer on the tables the first one had: the HTTP row used to run on the direct row's
      // 2 × N rows (its 1000-per-call phase between 3 and 4 × N), graphile-worker's keyed row on
      // the plain row's.
      if (!isFirst) await session.reset?.();
      isFirst = false;
      const label = producerLabel(producer, session, ctx.variants);
      const values: Record<string, number> = {};
      for (const size of [100, 1000]) {
        const jobs = jobsAt(size);
        let rate = 0;
        const isCosted = size === 1000;
        const statements = isCosted ? await statementProfile(session.observer) : null;
        const cost = await phase(session, isCosted, async () => {
          const cpu0 = process.cpuUsage();
          const server0 = producer.serverCpuMs?.() ?? 0;
          const pg0 = pgTicks();
          const t0 = nowMs();
          for (let done = 0; done < jobs; done += size) {
            const batch = Array.from({ length: Math.min(size, jobs - done) }, () => ({ k: k++ }));
            await producer.enqueueBatch(batch);
            ctx.progress.update(`(a) ${label}, ${runLabel(run, ctx.sizes.runs)}: ${size}/call ${done + batch.length}/${jobs}`);
          }
          rate = jobs / ((nowMs() - t0) / 1000);
          if (isCosted) {
            const cpu = process.cpuUsage(cpu0);
            const nodeMs = (cpu.user + cpu.system) / 1000 + ((producer.serverCpuMs?.() ?? 0) - server0);
            const pgMs = (pgTicks() - pg0) * 10;
            values.nodeCpu = (nodeMs * 1000) / jobs;
            values.pgCpu = pgMs > 0 ? (pgMs * 1000) / jobs : Number.NaN;
          }
          return jobs;
        });
        if (statements) statementNotes.add(label, await statements.top(3), jobs);
        values[`b${size}`] = rate;
        if (cost) Object.assign(values, perJobValues(cost));
      }
      rows.add(label, session.variant.id, values);
      ctx.progress.done(`(a) ${label}, ${runLabel(run, ctx.sizes.runs)}: ${fmt(values.b100!)} jobs/s at 100/call, ${fmt(values.b1000!)} at 1000/call`);
    }
  });
  return {
    id: "a",
    title: "(a) batch enqueue",
    notes: [
      `${fmt(jobsAt(100))} jobs per run at 100 per call, ${fmt(jobsAt(1000))} at 1000 per call (a phase of seconds: at 20 calls of 1000 one producer's rate ranged ±20% over three runs), sequential calls from one producer; per-job costs are of the 1000-per-call phase.`,
      "Porter direct = core enqueueJobs (what producer.enqueueBatch runs); HTTP = the producer API over HTTP (SDK client in this process → the API's server in a process of its own, as `npm start` serves it); graphile-worker addJobs; pg-boss insert.",
      "Every Porter job carries an idempotency key (the contract requires one: a ledger row per job); graphile-worker's plain rows carry none. The row 'jobKey per job' is graphile-worker with the same key as its jobKey — the same deduplication; the target is stated against the plain row.",
      "CPU per job at 1000/call: the producer's Node CPU (this process's; for the HTTP row also the API server process's) and PostgreSQL's (every postgres process on this machine) over the calls.",
      ...statementNotes.notes(" at 1000/call"),
    ],
    columns: [
      { key: "b100", label: "100/call jobs/s", better: "higher" },
      { key: "b1000", label: "1000/call jobs/s", better: "higher" },
      { key: "nodeCpu", label: "producer Node CPU µs/job", digits: 1, better: "lower" },
      { key: "pgCpu", label: "PostgreSQL CPU µs/job", digits: 1, better: "lower" },
      ...COST_COLUMNS,
    ],
    rows: rows.all(),
    details: [],
  };
};

/**
 * (b) Single enqueue: C callers each enqueueing one job per call, back to back, for a fixed time,
 * at C = 1, 8 and 32. Per-job costs are those of C = 32.
 */
export const singleEnqueue = async (ctx: BenchContext): Promise<ScenarioResult> => {
  const rows = new RowSet();
  const variants = enqueueVariants(ctx.variants);
  const levels = [1, 8, 32];
  await interleave(ctx, variants, { runs: ctx.sizes.runs }, async (session, run) => {
    const seconds = ctx.sizes.singleSeconds;
    let k = 1;
    let isFirst = true;
    for (const producer of await producersOf(session)) {
      if (!isFirst) await session.reset?.(); // as in (a): each producer on the tables the first one had
      isFirst = false;
      const label = producerLabel(producer, session, ctx.variants);
      const values: Record<string, number> = {};
      for (const c of levels) {
        const latencies: number[] = [];
        let rate = 0;
        const cost = await phase(session, c === 32, async () => {
          const t0 = nowMs();
          const end = t0 + seconds * 1000;
          let last = t0;
          const caller = async () => {
            while (nowMs() < end) {
              const start = nowMs();
              await producer.enqueueOne({ k: k++ });
              last = nowMs();
              latencies.push(last - start);
            }
          };
          const ticker = setInterval(
            () => ctx.progress.update(`(b) ${label}, ${runLabel(run, ctx.sizes.runs)}: concurrency ${c}, ${latencies.length} calls`),
            500,
          );
          await Promise.all(Array.from({ length: c }, caller));
          clearInterval(ticker);
          rate = latencies.length / ((last - t0) / 1000);
          return latencies.length;
        });
        const d = distribution(latencies);
        values[`c${c}`] = rate;
        values[`p50c${c}`] = d.p50;
        values[`p99c${c}`] = d.p99;
        if (cost) Object.assign(values, perJobValues(cost));
      }
      rows.add(label, session.variant.id, values);
      ctx.progress.done(`(b) ${label}, ${runLabel(run, ctx.sizes.runs)}: ${levels.map((c) => `${fmt(values[`c${c}`]!)}/s at ${c}`).join(", ")}`);
    }
  });
  return {
    id: "b",
    title: "(b) single enqueue",
    notes: [
      `${ctx.sizes.singleSeconds} s per concurrency level per run; each caller awaits its call before the next. Producer pool: ${ctx.budget.connections} connections (callers beyond it queue for one).`,
      "Porter direct = core enqueueJobs with one job (what producer.enqueue runs); HTTP = producer.enqueue over HTTP; graphile-worker addJob; pg-boss send. Per-job costs at concurrency 32.",
    ],
    columns: [
      { key: "c1", label: "c=1 jobs/s", better: "higher" },
      { key: "c8", label: "c=8 jobs/s", better: "higher" },
      { key: "c32", label: "c=32 jobs/s", better: "higher" },
      { key: "p50c1", label: "call p50 @1 ms", digits: 2, better: "lower" },
      { key: "p99c32", label: "call p99 @32 ms", digits: 1, better: "lower" },
      ...COST_COLUMNS,
    ],
    rows: rows.all(),
    details: [],
  };
};
