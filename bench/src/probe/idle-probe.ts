// Probe (not part of the suite): scenario (e) sample by sample. Runs (e)'s loop — an idle worker in
// its own process, single jobs enqueued one at a time, the next 20–50 ms after the previous is seen
// done — with the worker tracing every statement and notification (BENCH_TRACE, worker/trace.ts),
// and prints for each slow sample where its enqueue→start went: the enqueue call, the
// notification's arrival, the claim's dispatch and round trip, and the worker's other statements
// in that window.
//   npx tsx bench/src/probe/idle-probe.ts <variant: porter|graphile-tuned> [samples=200] [slowest=10]
// IDLE_PROBE_SQL=<file>: SQL run on the fresh database before the worker starts (say, a variant of
// porter_claim without one of its writes, to price it).
import { readFileSync } from "node:fs";
import { DoneProbe } from "../scenarios/done-probe";
import { openSession } from "../systems";
import { variantById } from "../variants";
import { distribution, nowMs } from "../worker/protocol";
import { spawnWorker } from "../worker/spawn";
import type { TraceEvent } from "../worker/trace";

const variantId = (process.argv[2] ?? "porter") as Parameters<typeof variantById>[0];
const samples = Number(process.argv[3] ?? 200);
const slowest = Number(process.argv[4] ?? 10);
const ADMIN = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const tracePath = `/tmp/idle-trace-${process.pid}.json`;
process.env.BENCH_TRACE = tracePath;
const budget = { concurrency: 24, connections: 26 };
const variant = variantById(variantId);
const [session, worker] = await Promise.all([
  openSession(ADMIN, variant, budget),
  spawnWorker({ variant: variant.id, budget, handler: { kind: "noop" }, timeClaims: false }),
]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rows: Array<{ k: number; t: number; enqEnd: number; doneAt: number }> = [];
if (process.env.IDLE_PROBE_SQL) await session.observer.query(readFileSync(process.env.IDLE_PROBE_SQL, "utf8"));
try {
  await worker.start(session.url);
  await sleep(500);
  const probe = new DoneProbe(session);
  for (let k = 0; k <= samples; k++) {
    const t = nowMs();
    const id = await session.enqueueOne({ k, t: k === 0 ? 0 : t });
    const enqEnd = nowMs();
    probe.track(id, t);
    await probe.settle(1, 10_000);
    if (k > 0) rows.push({ k, t, enqEnd, doneAt: nowMs() });
    await sleep(20 + Math.random() * 30);
  }
  await worker.waitFor((p) => p.succeeded >= samples + 1, 5_000);
} finally {
  await worker.stop().catch(() => undefined);
  await session.close();
}
const events = JSON.parse(readFileSync(tracePath, "utf8")) as TraceEvent[];
const startOf = new Map(events.filter((e) => e.kind === "start").map((e) => [Number(e.detail), e.t]));
const isClaim = (e: TraceEvent) => e.kind === "sql" && String(e.detail).includes(" CLAIM ");
const r1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : "-");
type Sample = {
  k: number;
  lat: number;
  enq: number;
  notify: number;
  claimAt: number;
  claimMs: number;
  afterClaim: number;
  others: string[];
  /** A wake-up of the status stream (pg_notify) of the worker was in flight between the enqueue call and the start. */
  hasStreamNotify: boolean;
  /** Another statement of the worker (maintenance, heartbeats; not the claim, the ack, the stream wake-up) was in flight in that window. */
  hasOther: boolean;
};
const out: Sample[] = rows.map(({ k, t, enqEnd }) => {
  const s = startOf.get(k) ?? NaN;
  const notify = events.find((e) => e.kind === "notify" && e.t >= t && e.t <= s);
  const claims = events.filter((e) => isClaim(e) && e.t <= s && (e.end ?? Infinity) <= s + 0.5);
  const claim = claims[claims.length - 1];
  const others = events
    .filter((e) => e.kind === "sql" && e !== claim && e.t < s && (e.end ?? Infinity) > t - 5)
    .map((e) => `${r1(e.t - t)}→${r1((e.end ?? NaN) - t)} ${String(e.detail).slice(0, 44)}`);
  return {
    k,
    lat: s - t,
    enq: enqEnd - t,
    notify: notify ? notify.t - t : NaN,
    claimAt: claim ? claim.t - t : NaN,
    claimMs: claim ? (claim.end ?? NaN) - claim.t : NaN,
    afterClaim: claim ? s - (claim.end ?? NaN) : NaN,
    others,
    hasOther: others.some((o) => !/pg_notify|set_config\(.synchronous_commit|WITH input AS/.test(o)),
    hasStreamNotify: events.some(
      (e) => e.kind === "sql" && /pg_notify|set_config\(.synchronous_commit/.test(String(e.detail)) && e.t < s && (e.end ?? Infinity) > t,
    ),
  };
});
const d = (f: (s: Sample) => number) => distribution(out.map(f).filter(Number.isFinite));
const line = (name: string, x: ReturnType<typeof distribution>) => `${name}: p50 ${r1(x.p50)} p99 ${r1(x.p99)} max ${r1(x.max)} mean ${r1(x.mean)}`;
console.log(`${variant.label}, ${out.length} samples`);
console.log(
  line(
    "enqueue→start",
    d((s) => s.lat),
  ),
);
console.log(
  line(
    "enqueue call",
    d((s) => s.enq),
  ),
);
console.log(
  line(
    "enqueue→notification",
    d((s) => s.notify),
  ),
);
console.log(
  line(
    "enqueue→claim dispatch",
    d((s) => s.claimAt),
  ),
);
console.log(
  line(
    "claim round trip",
    d((s) => s.claimMs),
  ),
);
console.log(
  line(
    "claim result→handler start",
    d((s) => s.afterClaim),
  ),
);
for (const [name, group] of [
  ["with a stream wake-up in flight", out.filter((s) => s.hasStreamNotify)],
  ["with maintenance or a heartbeat in flight", out.filter((s) => s.hasOther)],
  ["with neither", out.filter((s) => !s.hasStreamNotify && !s.hasOther)],
] as const) {
  console.log(
    `${line(`enqueue→start ${name} (${group.length})`, distribution(group.map((s) => s.lat)))}; enqueue call ${r1(distribution(group.map((s) => s.enq)).p50)} p50`,
  );
}
// The claim after each write (claim-loop.ts `onWritten`, a short claim without a bound) in the window of another sample.
console.log(
  `samples with another claim in flight between their enqueue call and their start: ${out.filter((s) => s.others.some((o) => o.includes("CLAIM SELECT id::text"))).length}`,
);
const sqlKinds = new Map<string, number>();
const t0 = rows[0]!.t;
const t1 = rows[rows.length - 1]!.doneAt;
for (const e of events)
  if (e.kind === "sql" && e.t >= t0 && e.t <= t1) {
    const key = String(e.detail).replace(/^\d+ /, "").slice(0, 50);
    sqlKinds.set(key, (sqlKinds.get(key) ?? 0) + 1);
  }
console.log(`worker statements per sample:`);
for (const [key, n] of [...sqlKinds].sort((a, b) => b[1] - a[1])) console.log(`  ${(n / out.length).toFixed(2)}  ${key}`);
console.log(`slowest ${slowest} (ms from the enqueue call; others = the worker's statements in flight in the window):`);
for (const s of [...out].sort((a, b) => b.lat - a.lat).slice(0, slowest)) {
  console.log(`k=${s.k} start ${r1(s.lat)} enq ${r1(s.enq)} notify ${r1(s.notify)} claim@${r1(s.claimAt)} +${r1(s.claimMs)} →start +${r1(s.afterClaim)}`);
  for (const o of s.others) console.log(`    ${o}`);
}
