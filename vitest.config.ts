import { defineConfig } from "vitest/config";

// Two projects: `unit` (pure, `*.test.ts` beside the code) and `integration` (`*.int.test.ts`,
// real PostgreSQL). Integration files each get their own database cloned from a template that
// packages/db/src/testing/global-setup.ts migrates once per run (DATABASE_URL, default
// postgres://postgres@127.0.0.1:5432/postgres, must be allowed to CREATE DATABASE).
// Run one: `npx vitest run --project unit` / `--project integration`.
const workspaces = ["packages", "apps"];

export default defineConfig({
  test: {
    // 2 cores here: more workers only add contention (and connections) for PostgreSQL.
    maxWorkers: 2,
    projects: [
      {
        test: {
          name: "unit",
          include: [...workspaces.flatMap((dir) => [`${dir}/**/src/**/*.test.ts`]), "e2e/*.test.ts", "bench/src/**/*.test.ts"],
          exclude: ["**/node_modules/**", "**/*.int.test.ts", "**/generated/**"],
          environment: "node",
        },
      },
      {
        test: {
          name: "integration",
          include: [...workspaces.flatMap((dir) => [`${dir}/**/src/**/*.int.test.ts`, `${dir}/*/tests/**/*.int.test.ts`]), "bench/src/**/*.int.test.ts"],
          exclude: ["**/node_modules/**", "**/generated/**"],
          environment: "node",
          globalSetup: ["packages/db/src/testing/global-setup.ts"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          // A poll waits for a real process or server; CI runs at load 20 on 2 cores, where the
          // 1 s default is a coin toss. A poll that fails still fails, only later.
          expect: { poll: { timeout: 10_000 } },
        },
      },
    ],
  },
});
