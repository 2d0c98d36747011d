// Probe (not part of the suite): scenario (a)'s 1000-per-call phase, Porter and graphile-worker
// interleaved in one process (P, G, P, G …), each segment `calls` sequential calls through the
// bench's own sessions (systems/porter.ts, systems/graphile.ts: what `npm run bench -- --scenario a`
// runs). Per segment: jobs/s, Node CPU and PostgreSQL CPU per 1000 jobs; at the end the medians and
// the median of the per-round ratios Porter ÷ graphile-worker. On a server of one's own
// (PERF_SERVER) PostgreSQL's CPU is that server's alone.
//   [PERF_SERVER=postgres://postgres@127.0.0.1:5541] npx tsx bench/src/probe/enqueue-ab.ts [rounds] [calls] [batch]
import { loadavg } from "node:os";
import { dropLeftovers } from "../database";
import { pgTicks, postmasterOf } from "../pg-ticks";
import { openGraphile } from "../systems/graphile";
import { openPorter } from "../systems/porter";
import type { Session } from "../systems/types";
import { VARIANTS } from "../variants";

const [rounds, calls, batch] = [Number(process.argv[2] ?? 8), Number(process.argv[3] ?? 10), Number(process.argv[4] ?? 1000)];
const SERVER = process.env.PERF_SERVER ?? "postgres://postgres@127.0.0.1:5432";
const adminUrl = `${SERVER}/postgres`;
await dropLeftovers(adminUrl);
const budget = { concurrency: 24, connections: 26 };
const porter = await openPorter(adminUrl, VARIANTS.find((v) => v.id === "porter")!, budget);
const graphile = await openGraphile(adminUrl, VARIANTS.find((v) => v.id === "graphile-tuned")!, budget);
const postmaster = process.env.PERF_SERVER ? await postmasterOf(porter.observer) : undefined;

let k = 1;
type Segment = { rate: number; nodeMs: number; pgMs: number };
const segment = async (session: Session): Promise<Segment> => {
  const c0 = process.cpuUsage();
  const p0 = pgTicks(postmaster);
  const t0 = performance.now();
  for (let i = 0; i < calls; i++) await session.enqueueBatch(Array.from({ length: batch }, () => ({ k: k++ })));
  const s = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  const per = (calls * batch) / 1000;
  return { rate: (calls * batch) / s, nodeMs: (c.user + c.system) / 1000 / per, pgMs: ((pgTicks(postmaster) - p0) * 10) / per };
};
for (const s of [porter, graphile]) await segment(s); // warm-up: plans, caches, connections

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const results: Array<{ p: Segment; g: Segment }> = [];
for (let r = 0; r < rounds; r++) {
  // Alternate which goes first, so neither always follows the other's dirty pages and vacuum.
  const [first, second] = r % 2 === 0 ? [porter, graphile] : [graphile, porter];
  const a = await segment(first);
  const b = await segment(second);
  const [p, g] = r % 2 === 0 ? [a, b] : [b, a];
  results.push({ p, g });
  console.log(
    `round ${r + 1}: porter ${p.rate.toFixed(0)}/s (node ${p.nodeMs.toFixed(1)}, pg ${p.pgMs.toFixed(1)} ms/1000)  `
      + `graphile ${g.rate.toFixed(0)}/s (node ${g.nodeMs.toFixed(1)}, pg ${g.pgMs.toFixed(1)})  ratio ${(p.rate / g.rate).toFixed(2)}  load ${loadavg()[0]!.toFixed(1)}`,
  );
}
const m = (f: (x: { p: Segment; g: Segment }) => number) => median(results.map(f)).toFixed(1);
console.log(
  `median: porter ${m((x) => x.p.rate)}/s node ${m((x) => x.p.nodeMs)} pg ${m((x) => x.p.pgMs)} ms/1000; `
    + `graphile ${m((x) => x.g.rate)}/s node ${m((x) => x.g.nodeMs)} pg ${m((x) => x.g.pgMs)}; ratio ${median(results.map((x) => x.p.rate / x.g.rate)).toFixed(3)}`,
);
await porter.close();
await graphile.close();
