// `npm start` runs each pool's worker from the bundle bundles.ts builds, with tsx loaded for the
// user's handlers module. That bundle leaves @porter/sdk and @porter/contracts outside, so the
// handlers and the worker share one copy: a handler's `new PermanentError()` is the class the
// worker classifies (bundled in, it would be a second class, and the job would be retried).
// A real worker process from the bundle, a TypeScript handlers module, PostgreSQL.
import { fileURLToPath } from "node:url";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { enqueue, jobRow, waitForStates } from "@porter/worker/testing/fixtures";
import { killWorker, spawnWorker, type WorkerProcess } from "@porter/worker/testing/worker-process";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleWorker } from "./bundles";

const testDb = useTestDatabase();
const root = fileURLToPath(new URL("../../../..", import.meta.url));
let db: pg.Pool;
let worker: WorkerProcess | undefined;

beforeAll(async () => {
  db = createPool(testDb.appConnectionString, { max: 4 });
  await controlPlane(db, {
    pool: "own-pool",
    queues: [{ id: "own" }],
    jobTypes: ["custom.permanent", "custom.echo"].map((id) => ({ id, queue: "own" })),
    tenants: ["tenant_A"],
  });
});

afterAll(async () => {
  if (worker) await killWorker(worker);
  await db.end();
});

describe("npm start's worker bundle", () => {
  it("runs a user's TypeScript handlers and classifies their @porter/sdk errors as the sources do", async () => {
    const script = await bundleWorker(root);
    worker = spawnWorker({
      connectionString: testDb.appConnectionString,
      pool: "own-pool",
      script,
      args: ["--handlers", "apps/worker/src/testing/handler-modules/classified.ts"],
    });
    const started = await worker.waitForLog((line) => line.msg === "worker started", 60_000);
    expect(started.handlers).toEqual(expect.arrayContaining(["custom.permanent", "custom.echo"]));
    const [permanent, echo] = await enqueue(db, [
      { type: "custom.permanent", payload: { n: 1 }, maxAttempts: 5 },
      { type: "custom.echo", payload: { text: "hi" } },
    ]);
    const states = await waitForStates(db, [permanent!, echo!], ["SUCCEEDED", "DEAD"]);
    expect(states.get(echo!)).toBe("SUCCEEDED");
    // Dead at its first attempt of five, with the handler's own code: not retried as unknown.
    expect(states.get(permanent!)).toBe("DEAD");
    const row = await jobRow(db, permanent!);
    expect(row?.attempt).toBe(1);
    expect(row?.error).toMatchObject({ code: "CUSTOM_REFUSED", class: "permanent" });
  });
});
