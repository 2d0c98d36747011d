// Suite "logs carry no secrets" (issue 9): drive the stack with a canary in payloads, an API key
// and the admin password — valid and invalid jobs, a failing job, a wrong and a right sign-in —
// then grep every line every process printed (e2e/serve.ts tees launcher, console, workers and
// the database's relayed lines into one file). Its name sorts it after the other specs (Playwright
// runs files in alphabetical order with one worker), so their traffic is in the file too.
import { existsSync, readFileSync } from "node:fs";
import { type APIRequestContext, expect, test } from "@playwright/test";
import { porterCli } from "./cli";
import { ADMIN, signIn } from "./console";
import { credentialsPath, e2eStackLogPath } from "./env";

const CANARY = `SECRET-CANARY-${Date.now().toString(36)}`;
const trpc = (path: string) => `/api/trpc/${path}`;
/** The secret part of an API key `pk_<id>_<secret>` (the id alone may be logged). */
const secretOf = (key: string): string => /^pk_[a-z0-9]{12}_(.+)$/.exec(key)![1]!;

/** Polls until the job's status is one of `states`, through the producer API. */
const waitForStatus = async (request: APIRequestContext, key: string, jobId: string, states: string[]) =>
  expect
    .poll(
      async () => {
        const res = await request.get(`${trpc("producer.get")}?input=${encodeURIComponent(JSON.stringify({ job_id: jobId }))}`, {
          headers: { authorization: `Bearer ${key}` },
        });
        return ((await res.json()) as { result?: { data?: { status?: string } } }).result?.data?.status;
      },
      { timeout: 30_000 },
    )
    .toMatch(new RegExp(`^(${states.join("|")})$`));

test("[LOGS][SECRETS]: no log line of any process carries a payload canary, the admin password or an API key", async ({ page, request }) => {
  const key = porterCli<{ key: string }>("keys", "create", "--tenant", "tenant_A", "--job-types", "*", "--name", "e2e-logs").key;
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  const enqueue = (data: Record<string, unknown>) => request.post(trpc("producer.enqueue"), { headers, data });

  // Valid jobs carrying the canary: one succeeds, one fails for good. (Not in `trace_id`: a trace id
  // is a correlation id, logged with every line of its job on purpose.)
  const ok = await enqueue({ job_type: "diag.effect", payload: { key: `${CANARY}-effect`, ms: 5 }, idempotency_key: `${CANARY}-ok` });
  expect(ok.status(), await ok.text()).toBe(200);
  const okId = ((await ok.json()) as { result: { data: { job_id: string } } }).result.data.job_id;
  const dead = await enqueue({ job_type: "diag.fail", payload: { mode: "permanent" }, idempotency_key: `${CANARY}-dead`, trace_id: "e2e-logs-trace" });
  expect(dead.status(), await dead.text()).toBe(200);
  const deadId = ((await dead.json()) as { result: { data: { job_id: string } } }).result.data.job_id;

  // Invalid input carrying the canary, each refused somewhere between the contract, PostgreSQL and
  // the handler.
  const invalid: Array<Record<string, unknown>> = [
    { job_type: "diag.effect", payload: { key: `${CANARY}\u0000` }, idempotency_key: `${CANARY}-nul-payload` },
    { job_type: "diag.effect", payload: { key: CANARY }, idempotency_key: `${CANARY}\u0000` },
    { job_type: "diag.effect", payload: { key: CANARY }, idempotency_key: `${CANARY}-trace`, trace_id: `${CANARY}\u0000` },
    { job_type: "diag.effect", payload: { key: `${CANARY}\ud800` }, idempotency_key: `${CANARY}-surrogate` },
    { job_type: "diag.effect", payload: { key: CANARY }, idempotency_key: `${CANARY}-date`, not_before: "0000-01-01T00:00:00Z" },
    { job_type: CANARY, payload: { key: CANARY }, idempotency_key: `${CANARY}-type` },
    { job_type: "diag.sleep", payload: { ms: CANARY }, idempotency_key: `${CANARY}-schema` },
  ];
  // Whatever these answer (most a 4xx; a payload its handler refuses runs and fails in the
  // worker), the point is what gets logged about them.
  for (const data of invalid) await enqueue(data);
  await request.post(trpc("producer.cancel"), { headers, data: { job_id: okId, reason: `${CANARY}\u0000` } });
  await request.get(`${trpc("producer.get")}?input=${encodeURIComponent(JSON.stringify({ job_id: CANARY }))}`, { headers });
  await request.post(trpc("producer.enqueue"), { headers, data: `{"job_type": "${CANARY}"` }); // not JSON
  await request.post(trpc("producer.enqueue"), { headers: { authorization: `Bearer ${key}x`, "content-type": "application/json" }, data: invalid[0] });

  await waitForStatus(request, key, okId, ["SUCCEEDED", "CANCELLED"]);
  await waitForStatus(request, key, deadId, ["DEAD"]);

  // A wrong password (carrying the canary), then the right one; then console filters with it.
  await page.goto("/signin");
  await page.getByLabel("Email").fill(ADMIN.email);
  await page.getByLabel("Password").fill(`wrong-${CANARY}`);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByText("Invalid email or password")).toBeVisible();
  await signIn(page, ADMIN);
  for (const filter of [{ idempotency_key: `${CANARY}\u0000` }, { tenant_id: `${CANARY}\u0000` }, { trace_id: CANARY }]) {
    await page.request.get(`${trpc("jobs.list")}?input=${encodeURIComponent(JSON.stringify({ filter }))}`);
  }
  await page.goto(`/jobs?idempotency_key=${encodeURIComponent(`${CANARY}\u0000`)}`);

  // Give the processes a moment to write what they log about all this.
  await page.waitForTimeout(2_000);
  const log = readFileSync(e2eStackLogPath(), "utf8");
  // The capture is real: the console's and the workers' lines are in it.
  expect(log).toContain("console sign-in refused");
  expect(log).toMatch(/\[worker:[^\]]+\] .*worker started/);

  // The producer key `npm start` created went to a 0600 file, not to its (redirected) output.
  // (Soft: without the file, the key is looked for in the log itself, so the report names the line.)
  const hasFile = existsSync(credentialsPath());
  expect.soft(hasFile, "npm start wrote its one-time credentials to .porter/credentials.txt").toBe(true);
  const seededKey = /producer key: (pk_\S+)/.exec(hasFile ? readFileSync(credentialsPath(), "utf8") : log)?.[1];
  expect(seededKey, "the producer key npm start created").toBeTruthy();

  const secrets: Array<[string, string]> = [
    ["the payload canary", CANARY],
    ["the admin password", ADMIN.password],
    ["the API key", secretOf(key)],
    ["the seeded producer key", secretOf(seededKey!)],
  ];
  const found = secrets
    .filter(([, secret]) => log.includes(secret))
    .map(([what, secret]) => {
      const line = log.split("\n").find((l) => l.includes(secret))!;
      return `${what} in: ${line.slice(0, 400)}`;
    });
  expect(found, `log lines with a secret (${e2eStackLogPath()})`).toEqual([]);
});
