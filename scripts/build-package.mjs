#!/usr/bin/env node
// Builds an installable package of @porter/sdk or @porter/worker: `node scripts/build-package.mjs
// sdk|worker [--pack <dir>]` (or `npm run package -w @porter/sdk`). It writes <workspace>/.package/:
// JavaScript (esbuild, ESM, node20) with type declarations (rollup-plugin-dts) and a package.json of
// its own, then `--pack <dir>` runs `npm pack` there. The monorepo keeps using the TypeScript sources.
//
// The internal packages (@porter/contracts, core, db) are not published: they are bundled in. Real
// npm packages stay dependencies (versions from the workspace's package.json). The worker does not
// bundle @porter/sdk and @porter/contracts but imports them from the published @porter/sdk (its
// `./contracts` entry), so a handler's `new PermanentError()` is the class the worker classifies.
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { rollup } from "rollup";
import { dts } from "rollup-plugin-dts";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

const TARGETS = {
  sdk: {
    dir: "packages/sdk",
    entries: { index: "src/index.ts", contracts: "../contracts/src/index.ts" },
    declarations: ["index", "contracts"],
    rewrites: {},
    exports: { ".": "index", "./contracts": "contracts" },
    bin: {},
  },
  worker: {
    dir: "apps/worker",
    entries: { index: "src/index.ts", "bin/worker": "src/bin/worker.ts" },
    declarations: ["index"],
    rewrites: { "@porter/contracts": "@porter/sdk/contracts", "@porter/sdk": "@porter/sdk" },
    exports: { ".": "index" },
    bin: { "porter-worker": "dist/bin/porter-worker.js" },
  },
};

const [name, ...rest] = process.argv.slice(2);
const target = TARGETS[name];
if (!target) {
  process.stderr.write("usage: node scripts/build-package.mjs sdk|worker [--pack <dir>]\n");
  process.exit(2);
}
const packDir = rest[0] === "--pack" ? resolve(rest[1] ?? ".") : undefined;
const workspace = join(root, target.dir);
const out = join(workspace, ".package");
const manifest = JSON.parse(readFileSync(join(workspace, "package.json"), "utf8"));

/** A bare specifier: bundled when internal, else external (an unused import of it is dropped). */
const resolveSpecifier = (specifier) => {
  if (!/^[^./]/.test(specifier)) return undefined;
  if (target.rewrites[specifier]) return { external: true, path: target.rewrites[specifier] };
  if (specifier.startsWith("@porter/")) return undefined;
  return { external: true, path: specifier };
};
/** The npm package a bare specifier names ("pg", "@trpc/client"); undefined for node: builtins. */
const packageOf = (specifier) => {
  if (specifier.startsWith("node:")) return undefined;
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
};

rmSync(out, { recursive: true, force: true });
const entryPoints = Object.fromEntries(Object.entries(target.entries).map(([k, v]) => [k, join(workspace, v)]));
const built = await esbuild.build({
  entryPoints,
  outdir: join(out, "dist"),
  bundle: true,
  splitting: true,
  platform: "node",
  format: "esm",
  target: "node20",
  metafile: true,
  logLevel: "warning",
  plugins: [
    {
      name: "porter-externals",
      setup(build) {
        build.onResolve({ filter: /^[^./]/ }, (args) => {
          const r = resolveSpecifier(args.path);
          return r && { ...r, sideEffects: false };
        });
      },
    },
  ],
});

const imported = new Set();
for (const output of Object.values(built.metafile.outputs)) {
  for (const i of output.imports) if (i.external && packageOf(i.path)) imported.add(packageOf(i.path));
}

// Type declarations: one bundled .d.ts per exported entry, the internal packages' types inlined.
for (const entry of target.declarations) {
  const source = entryPoints[entry];
  const bundle = await rollup({
    input: source,
    external: (id) => resolveSpecifier(id)?.external === true,
    plugins: [
      {
        name: "porter-dts-rewrites",
        resolveId: (id) => {
          const r = resolveSpecifier(id);
          return r?.external ? { id: r.path, external: true } : null;
        },
      },
      dts({ tsconfig: join(workspace, "tsconfig.json"), respectExternal: true, compilerOptions: { noEmit: false } }),
    ],
  });
  await bundle.write({ file: join(out, "dist", `${entry}.d.ts`), format: "es" });
  await bundle.close();
}

if (target.bin["porter-worker"]) {
  const bin = join(out, target.bin["porter-worker"]);
  mkdirSync(dirname(bin), { recursive: true });
  writeFileSync(bin, '#!/usr/bin/env node\n// One worker process for a pool: see `porter-worker --help`.\nawait import("./worker.js");\n');
  chmodSync(bin, 0o755);
}

const declared = { ...manifest.dependencies, ...manifest.devDependencies };
const dependencies = {};
for (const dep of [...imported].sort()) {
  if (dep === "@porter/sdk") dependencies[dep] = manifest.version;
  else if (declared[dep]) dependencies[dep] = declared[dep];
  else throw new Error(`${name}: the bundle imports ${dep}, which ${target.dir}/package.json does not declare`);
}
// Types the declarations import but the code does not (pg's, pino's Logger): what a TypeScript
// consumer needs, as dependencies (@types/pg) or optional peers (pino's own types).
const typeDependencies = {};
const peerDependencies = {};
for (const entry of target.declarations) {
  const text = readFileSync(join(out, "dist", `${entry}.d.ts`), "utf8");
  for (const [, specifier] of text.matchAll(/from '([^']+)'/g)) {
    const dep = packageOf(specifier);
    if (!dep || dependencies[dep]) continue;
    if (dep === "pg" || declared[`@types/${dep}`]) typeDependencies[`@types/${dep}`] = declared[`@types/${dep}`];
    else if (declared[dep]) peerDependencies[dep] = declared[dep];
    else throw new Error(`${name}: the declarations import ${dep}, which ${target.dir}/package.json does not declare`);
  }
  if (dependencies.pg && text.includes("from 'pg'")) typeDependencies["@types/pg"] = declared["@types/pg"];
}
const packed = {
  name: manifest.name,
  version: manifest.version,
  description: manifest.description,
  license: "UNLICENSED",
  type: "module",
  exports: Object.fromEntries(Object.entries(target.exports).map(([path, entry]) => [path, { types: `./dist/${entry}.d.ts`, default: `./dist/${entry}.js` }])),
  ...(Object.keys(target.bin).length > 0 ? { bin: target.bin } : {}),
  files: ["dist"],
  engines: { node: ">=20.19" },
  dependencies: { ...dependencies, ...typeDependencies },
  ...(Object.keys(peerDependencies).length > 0
    ? {
        peerDependencies,
        peerDependenciesMeta: Object.fromEntries(Object.keys(peerDependencies).map((dep) => [dep, { optional: true }])),
      }
    : {}),
};
writeFileSync(join(out, "package.json"), `${JSON.stringify(packed, null, 2)}\n`);

if (packDir) {
  mkdirSync(packDir, { recursive: true });
  const file = execFileSync("npm", ["pack", "--pack-destination", packDir, "--silent"], { cwd: out, encoding: "utf8" }).trim();
  process.stdout.write(`${join(packDir, file.split("\n").pop())}\n`);
} else {
  process.stdout.write(`${out}\n`);
}
