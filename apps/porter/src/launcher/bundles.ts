// What `npm start` runs: the console's server and each pool's worker as JavaScript bundles built
// here with esbuild at every start (well under a second each), not the TypeScript sources through
// tsx. tsx transpiles with esbuild's `keepNames`, which wraps every function and class in a helper
// call paid on every closure created: ~12% of a worker's CPU per job, and of the producer API's
// (docs/performance.md, "The bench's worker runs as JavaScript" and "npm start runs bundles").
// The processes still load tsx, for what the bundle leaves outside: the user's handlers module
// (TypeScript is fine), Next's `next.config.ts`, and in the worker @porter/sdk and
// @porter/contracts, which stay one module shared with the handlers (a handler's
// `new PermanentError()` is the class the worker classifies), as in the installable @porter/worker.
// tsx leaves `.mjs` files alone, so the bundle runs as built.
import { mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import * as esbuild from "esbuild";

/** The bundles' directory inside each app (ignored by git and by the console's build check). */
export const BUNDLE_DIR = ".porter-bundle";

/** The console's server (`apps/console/src/server/serve.ts`) bundled; returns the bundle's path. */
export const bundleConsoleServer = (root: string): Promise<string> =>
  bundle({ entry: join(root, "apps/console/src/server/serve.ts"), outfile: join(root, "apps/console", BUNDLE_DIR, "serve.mjs") });

/** The worker's entry (`apps/worker/src/bin/worker.ts`) bundled; returns the bundle's path. */
export const bundleWorker = (root: string): Promise<string> =>
  bundle({
    entry: join(root, "apps/worker/src/bin/worker.ts"),
    outfile: join(root, "apps/worker", BUNDLE_DIR, "worker.mjs"),
    shared: ["@porter/sdk", "@porter/contracts"],
  });

/**
 * One entry bundled into `outfile` (ESM, node20; the bench's processes are built by this too):
 * the workspace's @porter/* sources inside but the `shared` ones, every npm package left to Node's
 * resolution (from the bundle's directory: keep it inside the app whose packages it imports).
 * - `import.meta.url` keeps each source file's own URL, so paths computed from it (serve.ts's app
 *   directory, the worker's package.json, the Prisma client's directory) do not move with the bundle.
 * - A dynamic `import()` of a workspace module becomes a chunk of its own beside `outfile`, loaded
 *   when the import runs: the npm packages it imports load then too, not with the entry, so an
 *   entry that must set things up before they load (serve.ts: Next's environment first) still can.
 *   Files in the directory that no longer belong to the build are removed.
 */
export const bundle = async (options: { entry: string; outfile: string; shared?: string[] }): Promise<string> => {
  const shared = options.shared ?? [];
  const outdir = dirname(options.outfile);
  const name = basename(options.outfile).replace(/\.mjs$/, "");
  mkdirSync(outdir, { recursive: true });
  const built = await esbuild.build({
    entryPoints: [options.entry],
    outdir,
    entryNames: name,
    chunkNames: `${name}-chunk-[hash]`,
    outExtension: { ".js": ".mjs" },
    splitting: true,
    metafile: true,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "error",
    plugins: [
      {
        name: "porter-launch",
        setup: (build) => {
          build.onResolve({ filter: /^[^./]/ }, (args) =>
            args.path.startsWith("@porter/") && !shared.some((s) => args.path === s || args.path.startsWith(`${s}/`))
              ? undefined
              : { path: args.path, external: true },
          );
          build.onLoad({ filter: /\.tsx?$/ }, (args) => {
            const source = readFileSync(args.path, "utf8");
            if (!source.includes("import.meta.url")) return undefined;
            return {
              contents: source.replaceAll("import.meta.url", JSON.stringify(pathToFileURL(args.path).href)),
              loader: args.path.endsWith("x") ? "tsx" : "ts",
            };
          });
        },
      },
    ],
  });
  const outputs = new Set(Object.keys(built.metafile.outputs).map((o) => resolve(o)));
  if (!outputs.has(resolve(options.outfile))) throw new Error(`esbuild wrote no ${options.outfile}`);
  for (const file of readdirSync(outdir)) {
    if (file.startsWith(`${name}-chunk-`) && !outputs.has(join(outdir, file))) rmSync(join(outdir, file), { force: true });
  }
  return options.outfile;
};
