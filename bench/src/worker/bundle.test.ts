import { readdirSync, readFileSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { httpServerEntry, workerEntry } from "./bundle";

describe("the bench's child bundles", () => {
  it.each([
    ["worker", workerEntry, /\bPorterWorker = class\b/],
    ["producer API server", httpServerEntry, /\bcreateNodeTrpcHandler\b/],
  ] as const)(
    "the %s: Porter's workspace code as plain JavaScript, npm packages left to Node",
    async (_name, entryOf, inside) => {
      const entry = await entryOf();
      expect(entry).toMatchObject({ form: "bundle", execArgv: [] });
      // The entry and its chunks (a dynamic import of a workspace module is a chunk of its own).
      const dir = dirname(entry.path);
      const prefix = basename(entry.path, ".mjs");
      const files = readdirSync(dir).filter((f) => f === `${prefix}.mjs` || f.startsWith(`${prefix}-chunk-`));
      const code = files.map((f) => readFileSync(join(dir, f), "utf8")).join("\n");
      for (const f of files) rmSync(join(dir, f)); // this test's process may outlive the removal at exit
      // Porter's code is inside (bundled, not imported from the workspace's .ts sources).
      expect(code).toMatch(inside);
      expect(code).not.toMatch(/from\s+["']@porter\//);
      // No keepNames helper (tsx's transform wraps every function and class in one: the cost the
      // bundle exists to leave out).
      expect(code).not.toContain("__name(");
      // npm packages stay external: one copy of pg, the one the peers' adapters and Porter share.
      expect(code).toMatch(/^import \w+ from "pg";$/m);
    },
    30_000,
  );
});
