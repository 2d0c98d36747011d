import { readFileSync, rmSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { workerEntry } from "./bundle";

describe("the bench's worker bundle", () => {
  it("holds Porter's workspace code as plain JavaScript, npm packages left to Node", async () => {
    const entry = await workerEntry();
    expect(entry).toMatchObject({ form: "bundle", execArgv: [] });
    const code = readFileSync(entry.path, "utf8");
    rmSync(entry.path); // this test's process may outlive the file's own removal at exit
    // Porter's worker runtime is inside (bundled, not imported from the workspace's .ts sources).
    expect(code).toMatch(/\bPorterWorker = class\b/);
    expect(code).not.toMatch(/from\s+["']@porter\//);
    // No keepNames helper (tsx's transform wraps every function and class in one: the cost the
    // bundle exists to leave out).
    expect(code).not.toContain("__name(");
    // npm packages stay external: one copy of pg, the one the peers' adapters and Porter share.
    expect(code).toMatch(/^import \w+ from "pg";$/m);
  }, 30_000);
});
