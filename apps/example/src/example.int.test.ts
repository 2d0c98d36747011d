// Issue 11, point 2: the example runs as a user would run it. A real database with the demo seed,
// the HTTP API served for real, the worker a real process with `--handlers apps/example/src/handlers.ts`,
// and the example's producer enqueuing over HTTP with the SDK's producer client.

import { startTestServer, type TestServer } from "@porter/api/testing/http-server";
import { PolicyCache } from "@porter/core";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { seedDemo } from "@porter/porter/seed/demo";
import { createProducerClient } from "@porter/sdk/producer";
import { attemptsOf } from "@porter/worker/testing/fixtures";
import { killWorker, spawnWorker, type WorkerProcess } from "@porter/worker/testing/worker-process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { produce, waitUntilFinished } from "./produce";

const testDb = useTestDatabase();
let server: TestServer;
let worker: WorkerProcess | undefined;
let apiKey: string;

beforeAll(async () => {
  const seed = await seedDemo(testDb.appPrisma, { actor: "seed", adminEmail: "admin@porter.local", adminPassword: "correct horse battery" });
  apiKey = seed.producerKey!;
  server = await startTestServer({ db: testDb.appPool, policyCache: new PolicyCache({ ttlMs: 1000 }) });
});

afterAll(async () => {
  await killWorker(worker);
  await server?.close();
});

describe("apps/example", () => {
  it("runs the producer's jobs with the example's handlers: the email sent once despite a retry, the throttled webhooks after their 429s", async () => {
    // As the README says: `npm run worker -- --pool interactive --handlers apps/example/src/handlers.ts`.
    worker = spawnWorker({ connectionString: testDb.appConnectionString, pool: "interactive", args: ["--handlers", "apps/example/src/handlers.ts"] });
    const started = await worker.waitForLog((line) => line.msg === "worker started", 60_000);
    expect(started.handlers).toEqual(expect.arrayContaining(["email.send", "webhook.deliver"]));

    const client = createProducerClient({ url: server.url, apiKey });
    const jobIds = await produce(client, "tenant_A", "test");
    const statuses = await waitUntilFinished(client, jobIds, 25_000);
    expect(statuses.map((s) => [s.job_type, s.status])).toEqual([
      ["email.send", "SUCCEEDED"],
      ["webhook.deliver", "SUCCEEDED"],
      ["webhook.deliver", "SUCCEEDED"],
      ["webhook.deliver", "SUCCEEDED"],
    ]);

    // The email: attempt 1 sent it and then lost the connection; attempt 2 got the ledger's result.
    const [email, ...webhooks] = statuses;
    expect(email!.attempt).toBe(2);
    expect(email!.result).toEqual({ provider_message_ref: expect.stringMatching(/^mail:\/\/msg_/), sent_on_attempt: 1 });
    const ledger = await testDb.pool.query(`SELECT attempt FROM job_effects WHERE job_id = $1`, [email!.job_id]);
    expect(ledger.rows).toEqual([{ attempt: 1 }]);
    const sends = worker.logs().filter((line) => line.msg === "mail provider accepted the message" && line.jobId === email!.job_id);
    expect(sends).toHaveLength(1);
    const emailAttempts = await attemptsOf(testDb.pool, email!.job_id);
    expect(emailAttempts.map((a) => a.error?.code ?? a.outcome)).toEqual(["CONNECTION_RESET", "succeeded"]);

    // The webhooks: the endpoint takes one a second, so the others heard 429 and waited Retry-After.
    const throttled = [];
    for (const hook of webhooks) {
      const attempts = await attemptsOf(testDb.pool, hook.job_id);
      expect(attempts.at(-1)?.outcome).toBe("succeeded");
      const failed = attempts.slice(0, -1);
      for (const a of failed) expect(a.error).toMatchObject({ code: "RATE_LIMITED", class: "retryable" });
      if (failed.length > 0) throttled.push(hook);
    }
    expect(throttled.length).toBeGreaterThanOrEqual(2);
  });
});
