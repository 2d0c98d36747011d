import { expect, test } from "@playwright/test";
import { porterCli } from "./cli";
import { ADMIN, createUser, shot, signIn } from "./console";

type Job = { job_id: string };
type Status = { status: string };

// A tenant of its own (weight 2, running quota 2), so its numbers are exact: a short diag.sleep
// that succeeds, then three long ones — two RUNNING (its quota), one READY (so it is active in the
// background pool, alone: its weight share is 100%).
test.describe("[CONSOLE][USAGE] a tenant's usage, what each worker runs, per-attempt wait and run", () => {
  const tenant = `e2e_usage_${Date.now()}`;
  const long: string[] = [];
  let short: string;

  test.beforeAll(async ({ browser }) => {
    const page = await browser.newPage();
    await signIn(page, ADMIN);
    const status = await page.evaluate(async (id) => {
      const res = await fetch("/api/trpc/tenants.create", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ id, weight: 2, max_running: 2, reason: "e2e usage" }),
      });
      return res.status;
    }, tenant);
    expect(status).toBe(200);
    await page.close();
    short = porterCli<Job>("enqueue", "--type", "diag.sleep", "--tenant", tenant, "--payload", '{"ms":20}').job_id;
    await expect.poll(() => porterCli<Status>("jobs", "get", short).status, { timeout: 30_000 }).toBe("SUCCEEDED");
    for (let i = 0; i < 3; i++) long.push(porterCli<Job>("enqueue", "--type", "diag.sleep", "--tenant", tenant, "--payload", '{"ms":45000}').job_id);
    await expect.poll(() => long.map((id) => porterCli<Status>("jobs", "get", id).status).filter((s) => s === "RUNNING").length, { timeout: 30_000 }).toBe(2);
  });

  test.afterAll(() => {
    if (long.length) porterCli("jobs", "cancel", ...long, "--reason", "e2e usage clean-up");
  });

  test("[TENANT][USAGE]: running vs quota, weight share and pool share render with the tenant's numbers", async ({ page }) => {
    await signIn(page, createUser("viewer"), `/tenants/${tenant}`);
    const usage = page.getByTestId("tenant-usage");
    await expect(usage.getByTestId("usage-quota")).toContainText("2 / 2");
    const pool = usage.getByTestId("usage-pool-background");
    await expect(pool).toContainText("2 of");
    await expect(pool.getByTestId("weight-share-background")).toContainText("100.0% (weight of 2, 1 active)");
    await expect(usage.getByTestId("usage-throttled-keys")).toHaveText("none");
    await expect(page.getByTestId("flow-charts")).toHaveAttribute("data-scope", JSON.stringify({ tenant_id: tenant }));
    await shot(page, "tenant-usage");
  });

  test("[POOLS][WORKERS]: a worker's running jobs show on the pools page and link to the job page with per-attempt wait and run", async ({ page }) => {
    await signIn(page, createUser("viewer"), "/pools");
    const running = page.getByTestId("worker-running-job").filter({ hasText: tenant });
    await expect(running).toHaveCount(2);
    await expect(running.first()).toContainText("diag.sleep");
    await expect(running.first()).toContainText("ms ago");
    await shot(page, "pools-running");

    const workerId = await running.first().getAttribute("data-worker");
    expect(workerId).toBeTruthy();
    const jobId = (await running.first().getByTestId("running-job-link").getAttribute("title"))!;
    expect(long).toContain(jobId);
    await running.first().getByTestId("running-job-link").click();
    await expect(page.getByRole("heading", { name: new RegExp(jobId) })).toContainText("RUNNING");
    const attempt = page.getByTestId("attempt-row").first();
    await expect(attempt.getByTestId("attempt-wait")).toHaveText(/^[\d,]+ ms$/);
    await expect(attempt.getByTestId("attempt-run")).toHaveText(/^running for [\d,]+ ms$/);
    await expect(attempt.locator("time").first()).toHaveText(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    await shot(page, "job-attempts");

    // The worker id on the attempt links to the worker page: its facts, its running jobs, its attempts.
    await attempt.getByRole("link", { name: workerId! }).click();
    await expect(page).toHaveURL(new RegExp(`/pools/workers/${encodeURIComponent(workerId!)}$`));
    await expect(page.getByTestId("worker-facts")).toContainText("background");
    await expect(page.getByTestId("worker-running-job").filter({ hasText: jobId.slice(-12) })).toHaveCount(1);
    await shot(page, "worker");

    // The short job's page: a finished attempt's wait and run in ms.
    await page.goto(`/jobs/${short}`);
    const done = page.getByTestId("attempt-row").first();
    await expect(done.getByTestId("attempt-wait")).toHaveText(/^[\d,]+ ms$/);
    await expect(done.getByTestId("attempt-run")).toHaveText(/^[\d,]+ ms$/);
  });

  test("[WORKER][404]: an unknown worker's page says so", async ({ page }) => {
    await signIn(page, createUser("viewer"), "/pools/workers/no-such-worker");
    await expect(page.getByText("No such worker")).toBeVisible();
  });
});
