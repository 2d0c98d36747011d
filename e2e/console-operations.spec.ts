import { expect, test } from "@playwright/test";
import { porterCli } from "./cli";
import { ADMIN, createUser, enqueue, producerKey, shot, signIn } from "./console";

type Status = { status: string };

test.describe("[CONSOLE][OPERATIONS] an operator triages, an admin manages keys", () => {
  let key: string;
  test.beforeAll(() => {
    key = producerKey();
  });
  test.afterAll(() => {
    porterCli("resume", "diag");
  });

  test("[DLQ][REDRIVE]: a permanent diag.fail lands DEAD and an operator redrives it, audited", async ({ page, request }) => {
    const jobId = await enqueue(request, key, { job_type: "diag.fail", payload: { mode: "permanent" } });
    await expect.poll(() => porterCli<Status>("jobs", "get", jobId).status, { timeout: 30_000 }).toBe("DEAD");

    const operator = createUser("operator");
    await signIn(page, operator, "/queues");
    // Pause diag first, so the redriven job stays READY where we can see it.
    await page.getByRole("button", { name: "Pause queue diag" }).click();
    const pause = page.getByRole("dialog", { name: "Pause queue diag" });
    await pause.getByLabel("Reason (required, kept in the audit log)").fill("e2e: hold the redriven job");
    await pause.getByRole("button", { name: "Pause queue diag" }).click();
    await expect(page.getByRole("button", { name: "Resume queue diag" })).toBeVisible();

    await page.goto("/jobs?state=DEAD");
    await expect(page.getByRole("button", { name: /DEAD/, pressed: true })).toBeVisible();
    await page.getByRole("link", { name: jobId.slice(-12) }).click();
    await expect(page.getByRole("heading", { name: new RegExp(jobId) })).toContainText("DEAD");
    await expect(page.getByText("DIAG_PERMANENT").first()).toBeVisible();
    await shot(page, "job-dead");

    await page.getByRole("button", { name: "Redrive" }).click();
    const dialog = page.getByRole("dialog", { name: "Redrive dead jobs" });
    // A permanent error is redriven only when forced: the dry run says so, and again with force.
    await expect(dialog.getByTestId("dry-run")).toContainText("1 job skipped: permanent");
    await dialog.getByLabel(/^Force:/).check();
    await expect(dialog.getByTestId("dry-run")).toContainText("1 job will be affected");
    await dialog.getByLabel("Reason (kept in the audit log)").fill("e2e: fixed upstream");
    await shot(page, "redrive-dialog");
    await dialog.getByRole("button", { name: /Confirm: Redrive 1 job/ }).click();
    await expect(page.getByRole("status").filter({ hasText: "Redriven: 1 job" })).toBeVisible();
    await expect(page.getByRole("heading", { name: new RegExp(jobId) })).toContainText("READY");
    await expect(page.locator('[data-kind="redriven"]')).toContainText(`Redriven by user:${operator.email}`);
    await expect(page.locator('[data-kind="redriven"]')).toContainText("e2e: fixed upstream");
    await shot(page, "job-redriven");

    await page.goto(`/audit`);
    await expect(page.getByRole("row").filter({ hasText: "job.redrive" }).filter({ hasText: operator.email }).first()).toBeVisible();

    await page.goto("/queues");
    await page.getByRole("button", { name: "Resume queue diag" }).click();
    await expect(page.getByRole("button", { name: "Pause queue diag" })).toBeVisible();
  });

  test("[JOBS][BULK]: an operator cancels selected jobs after a dry run", async ({ page, request }) => {
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await enqueue(request, key, { job_type: "diag.sleep", payload: { ms: 1 }, not_before: later }));
    const operator = createUser("operator", "bulk");
    await signIn(page, operator, "/jobs?state=READY&queue=diag");
    for (const id of ids) await page.getByRole("checkbox", { name: `Select job ${id}` }).check();
    await page.getByRole("button", { name: "Cancel selected" }).click();
    const dialog = page.getByRole("dialog", { name: "Cancel jobs" });
    await expect(dialog.getByTestId("dry-run")).toContainText("3 jobs will be affected");
    await dialog.getByRole("button", { name: /Confirm: Cancel jobs 3 jobs/ }).click();
    await expect(page.getByRole("status").filter({ hasText: "3 jobs" })).toBeVisible();
    for (const id of ids) expect(porterCli<Status>("jobs", "get", id).status).toBe("CANCELLED");
    await shot(page, "jobs-after-bulk-cancel");
  });

  test("[API KEYS]: a key created in the console works once shown, and is refused after revoke", async ({ page, request }) => {
    await signIn(page, ADMIN, "/api-keys");
    await page.getByRole("button", { name: "New API key" }).click();
    const form = page.getByRole("region", { name: "New API key form" });
    await form.getByRole("button", { name: "Create key" }).click();
    await expect(form.getByText("pick at least one tenant")).toBeVisible();
    await form.getByLabel("Name").fill("e2e console key");
    await form.getByRole("checkbox", { name: "tenant_A" }).check();
    await form.getByRole("button", { name: "Create key" }).click();
    const secret = await page.getByTestId("new-api-key").inputValue();
    expect(secret).toMatch(/^pk_[a-z0-9]{12}_/);
    await shot(page, "api-key-created");

    const jobId = await enqueue(request, secret, { job_type: "diag.sleep", payload: { ms: 1 } });
    expect(jobId).toMatch(/^[0-9a-f-]{36}$/);

    const id = secret.split("_")[1]!;
    await page.getByRole("button", { name: "Done" }).click();
    await page.getByRole("button", { name: `Revoke key ${id}` }).click();
    await page.getByRole("dialog", { name: "Revoke API key" }).getByRole("button", { name: "Revoke key" }).click();
    await expect(page.getByRole("status").filter({ hasText: `Revoked key ${id}` })).toBeVisible();
    await shot(page, "api-keys");

    const refused = await request.post("/api/trpc/producer.enqueue", {
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      data: { tenant_id: "tenant_A", job_type: "diag.sleep", payload: { ms: 1 }, idempotency_key: `after-revoke-${Date.now()}` },
    });
    expect(refused.status()).toBe(401);
  });
});
