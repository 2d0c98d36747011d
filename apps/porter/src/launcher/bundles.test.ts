import { execFile } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { bundle } from "./bundles";

const root = fileURLToPath(new URL("../../../..", import.meta.url));
// Beside the bundles npm start builds (so npm packages resolve as theirs do), in a directory of
// this test's own.
const out = (app: string, name: string) => join(root, "apps", app, ".porter-bundle", `test-${process.pid}`, name);
afterAll(() => {
  for (const app of ["console", "worker"]) rmSync(dirname(out(app, "x")), { recursive: true, force: true });
});

/** The specifiers a module imports statically (`import … from "x"`, `import "x"`). */
const staticImports = (code: string): string[] => [...code.matchAll(/^import\s+(?:[^"';]*?\s+from\s+)?"([^"]+)";?$/gm)].map((m) => m[1] ?? "");

describe("npm start's bundles (bundles.ts)", () => {
  it("the worker: plain JavaScript, @porter/sdk and contracts shared with the handlers, runs", { timeout: 60_000 }, async () => {
    const path = await bundle({
      entry: join(root, "apps/worker/src/bin/worker.ts"),
      outfile: out("worker", "worker.mjs"),
      shared: ["@porter/sdk", "@porter/contracts"],
    });
    const code = readFileSync(path, "utf8");
    // No keepNames helper: what running the sources through tsx costs per closure.
    expect(code).not.toContain("__name(");
    // Each source's own URL, not the bundle's: the worker's package.json is found where it was.
    expect(code).not.toContain("import.meta.url");
    const porter = staticImports(code).filter((s) => s.startsWith("@porter/"));
    expect(new Set(porter.map((s) => s.split("/").slice(0, 2).join("/")))).toEqual(new Set(["@porter/sdk", "@porter/contracts"]));
    expect(staticImports(code)).toContain("pg");
    // It runs as npm start runs it (tsx loaded for a TypeScript handlers module and the shared packages).
    const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", path, "--help"], { cwd: root });
    expect(stdout).toMatch(/^Usage: porter-worker --pool <name>/);
  });

  it("the console's server: Next's packages load only after its environment, each in the chunk that imports them", { timeout: 60_000 }, async () => {
    const stale = out("console", "serve-chunk-STALE.mjs");
    await bundle({ entry: join(root, "apps/console/src/server/serve.ts"), outfile: out("console", "serve.mjs") });
    writeFileSync(stale, "export {};\n");
    const path = await bundle({ entry: join(root, "apps/console/src/server/serve.ts"), outfile: out("console", "serve.mjs") });
    // A chunk no longer in the build is removed.
    expect(existsSync(stale)).toBe(false);
    const code = readFileSync(path, "utf8");
    expect(code).not.toContain("import.meta.url");
    expect(code).not.toContain("__name(");
    // What loads before serve.ts's first line runs: its static imports and theirs. None is Next or
    // next-auth (they need Next's AsyncLocalStorage, set up by node-environment.js first).
    const loadedFirst = new Set<string>();
    const visit = (file: string) => {
      for (const specifier of staticImports(readFileSync(file, "utf8"))) {
        if (specifier.startsWith("./")) visit(join(dirname(file), specifier));
        else loadedFirst.add(specifier);
      }
    };
    visit(path);
    expect([...loadedFirst].filter((s) => /^next(-auth)?(\/|$)/.test(s))).toEqual([]);
    expect(loadedFirst).toContain("pg");
    expect(code.indexOf('await import("next/dist/server/node-environment.js")')).toBeGreaterThan(0);
    expect(code.indexOf('await import("next/dist/server/node-environment.js")')).toBeLessThan(code.indexOf('await import("next")'));
  });
});
