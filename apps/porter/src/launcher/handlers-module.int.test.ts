// PORTER_HANDLERS is checked by `npm start` before it starts workers: the worker's own checks,
// across every pool (each worker runs its pool's share). Modules: apps/worker/src/testing/handler-modules.
import { fileURLToPath } from "node:url";
import { DIAG_JOB_TYPES } from "@porter/contracts";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { checkHandlersModule } from "./handlers-module";

const testDb = useTestDatabase();
const MODULES = fileURLToPath(new URL("../../../worker/src/testing/handler-modules/", import.meta.url));
const POOLS = ["own-pool", "elsewhere-pool"];

beforeAll(async () => {
  const db = testDb.appPool;
  await controlPlane(db, {
    pool: "own-pool",
    queues: [{ id: "own" }],
    jobTypes: [...DIAG_JOB_TYPES, "custom.echo", "custom.upper"].map((id) => ({ id, queue: "own" })),
  });
  await controlPlane(db, { pool: "elsewhere-pool", queues: [{ id: "elsewhere" }], jobTypes: [{ id: "custom.elsewhere", queue: "elsewhere" }] });
});

describe("checkHandlersModule (PORTER_HANDLERS)", () => {
  it("accepts a module whose handlers span pools, and names its job types", async () => {
    expect(await checkHandlersModule(testDb.appPool, `${MODULES}good.ts`, POOLS)).toEqual(["custom.echo", "custom.upper"]);
    expect(await checkHandlersModule(testDb.appPool, `${MODULES}other-pool.ts`, POOLS)).toEqual(["custom.echo", "custom.elsewhere"]);
  });

  it("refuses what a worker would refuse, naming PORTER_HANDLERS", async () => {
    const check = (file: string) => checkHandlersModule(testDb.appPool, `${MODULES}${file}`, POOLS);
    await expect(check("missing.ts")).rejects.toThrow(/^PORTER_HANDLERS: handler module \S+missing\.ts: no such file/);
    await expect(check("not-a-handler.ts")).rejects.toThrow(/^PORTER_HANDLERS: handler module \S+: export "settings" is not a handler/);
    await expect(check("duplicate.ts")).rejects.toThrow(/^PORTER_HANDLERS \(\S+duplicate\.ts\): two handlers for job type "custom\.echo"$/);
    await expect(check("builtin-clash.ts")).rejects.toThrow(/job type "diag\.sleep" has a built-in handler \(diag\.\* are reserved\)$/);
    await expect(check("unknown-type.ts")).rejects.toThrow(/handler for job type "custom\.unregistered": the job-type registry has no such type/);
  });
});
