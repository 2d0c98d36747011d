// What the bench's child processes run: its worker processes (child.ts) and the producer API's
// server (systems/porter-http-server.ts). By default one JavaScript bundle of each, built once per
// bench process by the bundler `npm start` builds its console server and workers with
// (@porter/porter/launcher/bundles): Porter's workspace sources and the bench's adapters bundled,
// every npm package (pg, graphile-worker, pg-boss, …) left to Node's resolution. That is the form
// users run: `npm start` runs bundles, the installable @porter/worker is one, and the peers ship
// JavaScript. Run through tsx instead, a process pays for tsx's `keepNames` helper on every closure
// it creates: 21 µs of Node CPU per job against 18 (docs/performance.md, "The bench's worker runs
// as JavaScript"). BENCH_WORKER=tsx runs the sources through tsx as before.
import { rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { bundle } from "@porter/porter/launcher/bundles";

export type ChildEntry = { path: string; execArgv: string[]; form: "bundle" | "tsx" };

const CHILD = fileURLToPath(new URL("./child.ts", import.meta.url));
const HTTP_SERVER = fileURLToPath(new URL("../systems/porter-http-server.ts", import.meta.url));
// Inside bench/, so the bundles' npm imports resolve from the bench's node_modules as the sources'.
const OUT_DIR = fileURLToPath(new URL("../../.scratch/bundles/", import.meta.url));

const entries = new Map<string, Promise<ChildEntry>>();
let removesAtExit = false;

const entryOf = (source: string): Promise<ChildEntry> => {
  let entry = entries.get(source);
  if (!entry) {
    entry = build(source);
    entries.set(source, entry);
  }
  return entry;
};

/** The worker child's entry: the bundle (built on first use), or child.ts under tsx with BENCH_WORKER=tsx. */
export const workerEntry = (): Promise<ChildEntry> => entryOf(CHILD);

/** The producer API server's entry, built and chosen as the worker's. */
export const httpServerEntry = (): Promise<ChildEntry> => entryOf(HTTP_SERVER);

/** How the bench's child processes run their code, for the report's header. */
export const childForm = (): string =>
  process.env.BENCH_WORKER === "tsx"
    ? " running the TypeScript sources through tsx (BENCH_WORKER=tsx)"
    : " running esbuild bundles of the worker and of the producer API's server (Porter's as `npm start` and the installable @porter/worker run it; the peers' libraries as published)";

const build = async (source: string): Promise<ChildEntry> => {
  if (process.env.BENCH_WORKER === "tsx") return { path: source, execArgv: ["--import", import.meta.resolve("tsx")], form: "tsx" };
  // One directory per bench process (the entry and its chunks): two benches at once never
  // overwrite each other's.
  const dir = `${OUT_DIR}${process.pid}/`;
  const path = await bundle({ entry: source, outfile: `${dir}${source.replace(/^.*\//, "").replace(/\.ts$/, "")}.mjs` });
  if (!removesAtExit) process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
  removesAtExit = true;
  return { path, execArgv: [], form: "bundle" };
};
