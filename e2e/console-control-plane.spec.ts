import { expect, test } from "@playwright/test";
import { ADMIN, enqueue, producerKey, shot, signIn } from "./console";

test.describe("[CONSOLE][CONTROL PLANE] an admin shapes the flow", () => {
  const queueId = `e2e.console-${Date.now()}`;

  test.afterAll(async ({ request, browser }) => {
    // Put diag.sleep back on its own queue whatever happened above (other specs rely on it).
    const page = await browser.newPage();
    await signIn(page, ADMIN);
    await page.evaluate(async () => {
      await fetch("/api/trpc/jobTypes.update", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ id: "diag.sleep", patch: { queue_id: "diag" }, reason: "e2e clean-up" }),
      });
    });
    await page.close();
    void request;
  });

  test("[QUEUE][CREATE]: a form error names the field; the queue is created, a job routed to it SUCCEEDS and its timeline opens", async ({ page, request }) => {
    await signIn(page, ADMIN, "/queues");
    await page.getByRole("button", { name: "New queue" }).click();
    const form = page.getByRole("region", { name: "New queue" });
    await form.getByLabel("Queue id").fill(queueId);
    await form.getByLabel("Pool (lane)").selectOption("background");
    await form.getByLabel("Default priority").fill("90");
    await form.getByLabel("Max priority").fill("40");
    await form.getByRole("button", { name: "Create queue" }).click();
    await expect(form.getByText("must not exceed the max priority")).toBeVisible();
    await expect(form.getByLabel("Default priority")).toHaveAttribute("aria-invalid", "true");
    await shot(page, "queue-form-error");

    await form.getByLabel("Max priority").fill("100");
    await form.getByLabel("Lease length").fill("10");
    await form.getByRole("button", { name: "Create queue" }).click();
    await expect(page.getByRole("status").filter({ hasText: `Created queue ${queueId}` })).toBeVisible();
    await expect(page.getByRole("link", { name: queueId, exact: true })).toBeVisible();
    await shot(page, "queues");

    // Route diag.sleep to the new queue (the background pool's worker serves it).
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Job types" }).click();
    await page.getByRole("button", { name: "Edit job type diag.sleep" }).click();
    const edit = page.getByRole("region", { name: "Edit job type diag.sleep" });
    await edit.getByLabel("Queue").selectOption(queueId);
    await edit.getByRole("button", { name: "Save changes" }).click();
    await expect(page.getByRole("status").filter({ hasText: "Saved job type diag.sleep" })).toBeVisible();
    await shot(page, "job-types");

    await page.waitForTimeout(1_500); // the console's registry cache holds job types for 1 s
    const jobId = await enqueue(request, producerKey(), { job_type: "diag.sleep", payload: { ms: 300 } });

    await page.goto(`/jobs?queue=${encodeURIComponent(queueId)}`);
    const row = page.getByRole("row").filter({ has: page.getByRole("link", { name: jobId.slice(-12) }) });
    await expect(row.getByText("SUCCEEDED")).toBeVisible({ timeout: 30_000 });
    await shot(page, "jobs");

    await row.getByRole("link", { name: jobId.slice(-12) }).click();
    await expect(page.getByRole("heading", { name: new RegExp(jobId) })).toBeVisible();
    const timeline = page.getByRole("list").filter({ has: page.locator("[data-kind]") });
    await expect(timeline.locator('[data-kind="enqueued"]')).toBeVisible();
    await expect(timeline.locator('[data-kind="claimed"]')).toContainText("Claimed by");
    await expect(timeline.locator('[data-kind="succeeded"]')).toBeVisible();
    await expect(page.getByRole("heading", { name: "Result" })).toBeVisible();
    await shot(page, "job-succeeded");

    // The change is in the audit log with before → after.
    await page.goto("/audit");
    await expect(page.getByRole("row").filter({ hasText: "job_type.update" }).filter({ hasText: "diag.sleep" }).first()).toBeVisible();
    await expect(page.getByRole("row").filter({ hasText: "queue.create" }).filter({ hasText: queueId })).toBeVisible();
    await shot(page, "audit");
  });

  test("[POOLS]: pools show their live workers", async ({ page }) => {
    await signIn(page, ADMIN, "/pools");
    const background = page.getByRole("article", { name: "background" });
    await expect(background.getByText("live").first()).toBeVisible();
    await expect(background.getByRole("columnheader", { name: "PID" })).toBeVisible();
    await shot(page, "pools");
  });

  test("[TENANTS][RESOURCE KEYS][USERS]: every control-plane page renders for the admin", async ({ page }) => {
    await signIn(page, ADMIN, "/tenants");
    await expect(page.getByRole("link", { name: "tenant_C" })).toBeVisible();
    await page.getByRole("button", { name: "Edit tenant tenant_C" }).click();
    const edit = page.getByRole("region", { name: "Edit tenant tenant_C" });
    await edit.getByLabel("Backlog cap").fill("-5");
    await edit.getByRole("button", { name: "Save changes" }).click();
    await expect(edit.getByText("at least 0")).toBeVisible();
    await shot(page, "tenants");
    await page.goto("/resource-keys");
    await expect(page.getByRole("rowheader", { name: "llm" })).toBeVisible();
    await shot(page, "resource-keys");
    await page.goto("/users");
    await expect(page.getByRole("rowheader", { name: /admin@porter.local/ })).toBeVisible();
    await shot(page, "users");
  });
});
