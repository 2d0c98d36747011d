// Issue 11, point 1: `porter-worker --handlers <module>` runs a user's own handlers next to the
// built-in ones, and a handler set that cannot run stops the worker at start with one line and
// exit code 2. Real worker processes and PostgreSQL; the modules are testing/handler-modules/*.

import { DIAG_JOB_TYPES } from "@porter/contracts";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import type pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { enqueue, jobRow, waitForStates } from "../testing/fixtures";
import { killWorker, spawnWorker, type WorkerLaunch, type WorkerProcess } from "../testing/worker-process";

const testDb = useTestDatabase();
const MODULES = "apps/worker/src/testing/handler-modules";
let db: pg.Pool;
const spawned: WorkerProcess[] = [];

const run = (args: string[], via: WorkerLaunch = "node") => {
  const worker = spawnWorker({ connectionString: testDb.appConnectionString, pool: "own-pool", args, via });
  spawned.push(worker);
  return worker;
};

beforeAll(async () => {
  db = createPool(testDb.appConnectionString, { max: 4 });
  await controlPlane(db, {
    pool: "own-pool",
    queues: [{ id: "own" }],
    jobTypes: [...DIAG_JOB_TYPES, "custom.echo", "custom.upper", "custom.js"].map((id) => ({ id, queue: "own" })),
    tenants: ["tenant_A"],
  });
  await controlPlane(db, {
    pool: "elsewhere-pool",
    queues: [{ id: "elsewhere" }],
    jobTypes: [{ id: "custom.elsewhere", queue: "elsewhere" }],
    tenants: ["tenant_A"],
  });
});

afterEach(async () => {
  for (const worker of spawned.splice(0)) await killWorker(worker);
});

afterAll(async () => {
  await db.end();
});

describe("--handlers <module>", () => {
  it("runs the module's handlers (default and array exports) to SUCCEEDED, next to the built-in diag.*", async () => {
    // Relative to the working directory (the spawn's is the repository root).
    const worker = run(["--handlers", `${MODULES}/good.ts`]);
    const started = await worker.waitForLog((line) => line.msg === "worker started", 60_000);
    expect(started.handlers).toEqual(expect.arrayContaining(["custom.echo", "custom.upper", "diag.sleep"]));
    const [echo, upper, sleep] = await enqueue(db, [
      { type: "custom.echo", payload: { text: "hi" } },
      { type: "custom.upper", payload: { text: "hi" } },
      { type: "diag.sleep", payload: { ms: 1 } },
    ]);
    const states = await waitForStates(db, [echo!, upper!, sleep!], ["SUCCEEDED", "DEAD"]);
    expect([...states.values()]).toEqual(["SUCCEEDED", "SUCCEEDED", "SUCCEEDED"]);
    expect((await jobRow(db, echo!))?.result).toEqual({ echo: "hi" });
    expect((await jobRow(db, upper!))?.result).toEqual({ upper: "HI" });
  });

  it("loads a JavaScript module, through the porter-worker bin from another working directory (an absolute path)", async () => {
    const worker = run(["--handlers", `${process.cwd()}/${MODULES}/good.mjs`], "bin");
    await worker.waitForLog((line) => line.msg === "worker started", 60_000);
    const [id] = await enqueue(db, [{ type: "custom.js", payload: { n: 7 } }]);
    await waitForStates(db, [id!], ["SUCCEEDED"]);
    expect((await jobRow(db, id!))?.result).toEqual({ from: "js", n: 7 });
  });

  it("leaves out other pools' handlers with --skip-other-pools (one module for every pool's worker)", async () => {
    const worker = run(["--handlers", `${MODULES}/other-pool.ts`, "--skip-other-pools"]);
    const started = await worker.waitForLog((line) => line.msg === "worker started", 60_000);
    expect(started.handlers).toContain("custom.echo");
    expect(started.handlers).not.toContain("custom.elsewhere");
  });

  const cases: Array<[string, string, RegExp]> = [
    ["a missing module", "missing.ts", /^porter-worker: handler module \S+missing\.ts: no such file \(\/\S+\/missing\.ts\)$/],
    ["a module that fails to load", "broken.ts", /^porter-worker: handler module \S+broken\.ts could not be loaded: the handler module's top level failed$/],
    [
      "an export that is not a handler",
      "not-a-handler.ts",
      /^porter-worker: handler module \S+: export "settings" is not a handler \(make handlers with defineHandler/,
    ],
    ["a module without handlers", "empty.ts", /^porter-worker: handler module \S+empty\.ts: the module exports no handlers$/],
    ["two handlers for one job type", "duplicate.ts", /^porter-worker: two handlers for job type "custom\.echo"$/],
    ["a handler for a built-in job type", "builtin-clash.ts", /^porter-worker: job type "diag\.sleep" has a built-in handler \(diag\.\* are reserved\)$/],
    [
      "a job type the registry does not know",
      "unknown-type.ts",
      /^porter-worker: handler for job type "custom\.unregistered": the job-type registry has no such type/,
    ],
    [
      "a job type of another pool",
      "other-pool.ts",
      /^porter-worker: handler for job type "custom\.elsewhere": its queue "elsewhere" is in pool "elsewhere-pool", not "own-pool"$/,
    ],
  ];
  it.each(cases)("refuses to start on %s: one line, exit code 2, nothing registered", async (_what, file, message) => {
    const workers = async () => (await db.query(`SELECT id FROM workers`)).rowCount;
    const before = await workers();
    const worker = run(["--handlers", `${MODULES}/${file}`]);
    const exit = await worker.exited;
    expect(exit.code).toBe(2);
    const output = worker.output().trim();
    expect(output.split("\n")).toHaveLength(1);
    expect(output).toMatch(message);
    expect(await workers()).toBe(before);
  });
});
