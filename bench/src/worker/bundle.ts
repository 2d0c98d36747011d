// What the bench's worker processes run. By default one JavaScript bundle of child.ts, built once per
// bench process with esbuild: Porter's workspace sources and the bench's adapters bundled, every npm
// package (pg, graphile-worker, pg-boss, …) left to Node's resolution. That is the form users run:
// the installable @porter/worker is an esbuild bundle too (scripts/build-package.mjs), and the peers
// ship JavaScript. Run through tsx instead, a worker pays for tsx's `keepNames` helper on every
// closure it creates: 21 µs of Node CPU per job against 18 (docs/performance.md, "The bench's worker
// runs as JavaScript"). BENCH_WORKER=tsx runs the sources through tsx as before.
import { mkdirSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

export type WorkerEntry = { path: string; execArgv: string[]; form: "bundle" | "tsx" };

const SOURCE = fileURLToPath(new URL("./child.ts", import.meta.url));
// Two levels below bench/, as child.ts is: its relative URLs (pg-clients.ts finds the peers' pg at
// ../../.peers) resolve the same from the bundle.
const OUT_DIR = fileURLToPath(new URL("../../.scratch/worker/", import.meta.url));

let entry: Promise<WorkerEntry> | undefined;

/** The worker child's entry: the bundle (built on first use), or child.ts under tsx with BENCH_WORKER=tsx. */
export const workerEntry = (): Promise<WorkerEntry> => {
  entry ??= build();
  return entry;
};

const build = async (): Promise<WorkerEntry> => {
  if (process.env.BENCH_WORKER === "tsx") return { path: SOURCE, execArgv: ["--import", import.meta.resolve("tsx")], form: "tsx" };
  mkdirSync(OUT_DIR, { recursive: true });
  // One file per bench process: two benches at once never overwrite each other's worker.
  const path = `${OUT_DIR}child-${process.pid}.mjs`;
  await esbuild.build({
    entryPoints: [SOURCE],
    outfile: path,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "warning",
    plugins: [
      {
        name: "npm-packages-external",
        setup: (b) => {
          // Bare specifiers: the workspace's @porter/* sources are bundled, npm packages are not.
          b.onResolve({ filter: /^[^./]/ }, (args) => (args.path.startsWith("@porter/") ? undefined : { path: args.path, external: true }));
        },
      },
    ],
  });
  process.once("exit", () => rmSync(path, { force: true }));
  return { path, execArgv: [], form: "bundle" };
};
