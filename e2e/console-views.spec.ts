// What an operator sees on the console's views (issue 9, defect 10): ids that tell rows apart,
// the audit log in order without repeats, attempts told apart across redrives, confirmations
// before pause/drain/role changes, a SIGKILLed worker shown lost, health that names unserved
// pools, and a sidebar that runs the full height of a long page.
import { type ChildProcess, spawn } from "node:child_process";
import { expect, type Page, test } from "@playwright/test";
import { porterCli } from "./cli";
import { ADMIN, createUser, enqueue, producerKey, shot, signIn } from "./console";
import { e2eDatabaseUrl } from "./env";

type Status = { status: string };

/** A console procedure called from the signed-in page, as the console's own code calls it. */
const call = (page: Page, path: string, input: unknown) =>
  page.evaluate(
    async ([p, body]) => {
      const res = await fetch(`/api/trpc/${p}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      return { status: res.status, text: await res.text() };
    },
    [path, input] as const,
  );

/** The colour of one pixel of a PNG (`y` < 0 counts from the bottom), decoded by the browser. */
const pixel = async (page: Page, png: Buffer, x: number, y: number) =>
  page.evaluate(
    async ([data, px, py]) => {
      const img = new Image();
      img.src = `data:image/png;base64,${data}`;
      await img.decode();
      const canvas = document.createElement("canvas");
      canvas.width = img.width;
      canvas.height = img.height;
      const ctx = canvas.getContext("2d")!;
      ctx.drawImage(img, 0, 0);
      const [r, g, b] = ctx.getImageData(px, py < 0 ? img.height + py : py, 1, 1).data;
      return { r: r!, g: g!, b: b!, height: img.height };
    },
    [png.toString("base64"), x, y] as const,
  );
/** The audit page's first load, on a machine shared by several agents (seen at over 5 s). */
const AUDIT_LOAD_MS = 20_000;
const isDark = (c: { r: number; g: number; b: number }) => c.r + c.g + c.b < 150;

test.describe("[CONSOLE][VIEWS] what the operator reads is right, and consequential clicks ask first", () => {
  let key: string;
  test.beforeAll(() => {
    key = producerKey();
  });

  test("[JOBS][IDS]: 50 jobs enqueued at once show 50 distinct ids, and the copy button copies the full id", async ({ page, request, context }) => {
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const stamp = Date.now();
    const res = await request.post("/api/trpc/producer.enqueueBatch", {
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      data: {
        jobs: Array.from({ length: 50 }, (_, i) => ({
          job_type: "diag.fail",
          tenant_id: "tenant_A",
          payload: { mode: "permanent" },
          idempotency_key: `e2e-ids-${stamp}-${i}`,
          not_before: later,
        })),
      },
    });
    expect(res.status(), await res.text()).toBe(200);
    const ids = ((await res.json()) as { result: { data: { results: Array<{ job_id: string }> } } }).result.data.results.map((r) => r.job_id);
    // UUIDv7: jobs enqueued in the same millisecond share their leading (timestamp) digits.
    expect(new Set(ids.map((id) => id.slice(0, 8))).size).toBeLessThan(10);

    await context.grantPermissions(["clipboard-read", "clipboard-write"]);
    await signIn(page, ADMIN, "/jobs?queue=diag&state=READY");
    const shown = page.getByTestId("job-id");
    await expect(shown).toHaveCount(50);
    const texts = await shown.allTextContents();
    expect(new Set(texts).size).toBe(50);
    for (const id of ids) expect(texts).toContain(`…${id.slice(-12)}`);
    await shot(page, "jobs-distinct-ids");

    const first = ids.at(-1)!; // newest first
    await page.getByRole("button", { name: `Copy job id ${first}` }).click();
    await expect(page.getByRole("button", { name: `Copy job id ${first}` })).toHaveText("copied");
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(first);

    expect((await call(page, "jobs.cancel", { selection: { job_ids: ids }, dry_run: false, reason: "e2e cleanup" })).status).toBe(200);
  });

  test("[AUDIT][PAGING]: the audit log reads newest first in numeric order and Load more adds rows without repeats", async ({ page }) => {
    await signIn(page, ADMIN, "/");
    // 60 pause/resume pairs on a queue without traffic: 120 audit rows, ids across 99 → 100+.
    for (let i = 0; i < 60; i++) {
      expect((await call(page, "queues.pause", { id: "email.bulk", reason: `e2e paging ${i}` })).status).toBe(200);
      expect((await call(page, "queues.resume", { id: "email.bulk", reason: `e2e paging ${i}` })).status).toBe(200);
    }
    await page.goto("/audit");
    const rows = page.locator("tr[data-id]");
    await expect(rows).toHaveCount(50, { timeout: AUDIT_LOAD_MS });
    for (const n of [100, 150]) {
      await page.getByRole("button", { name: "Load more" }).click();
      await expect(rows).toHaveCount(n);
      await expect(page.getByText(`Showing ${n}`)).toBeVisible();
    }
    const ids = (await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-id")!))).map(Number);
    expect(new Set(ids).size).toBe(150);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    expect(ids[0]).toBeGreaterThanOrEqual(120);
    await shot(page, "audit-paged");
  });

  test("[ATTEMPTS]: after two redrives each run reads differently: run 3 · attempt 1 after redrive 2", async ({ page, request }) => {
    const jobId = await enqueue(request, key, { job_type: "diag.fail", payload: { mode: "permanent" } });
    for (let life = 0; life < 3; life++) {
      await expect.poll(() => porterCli<Status>("jobs", "get", jobId).status, { timeout: 30_000 }).toBe("DEAD");
      // --force: the error is permanent (a durable redrive skips those unless forced).
      if (life < 2) porterCli("redrive", jobId, "--force", "--reason", `e2e redrive ${life + 1}`);
    }
    await signIn(page, ADMIN, `/jobs/${jobId}`);
    const runs = page.getByTestId("attempt-row").locator("th");
    await expect(runs).toHaveText(["run 1 · attempt 1", "run 2 · attempt 1 after redrive 1", "run 3 · attempt 1 after redrive 2"]);
    await expect(page.locator('[data-kind="attempt_failed"]')).toHaveText([
      /Attempt 1 failed/,
      /Attempt 1 failed.* · after redrive 1/,
      /Attempt 1 failed.* · after redrive 2/,
    ]);
    await shot(page, "job-attempts-after-redrives");
  });

  test("[QUEUES][PAUSE]: Pause asks first with the ready count; Escape changes nothing; a reason is required and audited", async ({ page, request }) => {
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const held = [];
    for (let i = 0; i < 3; i++) held.push(await enqueue(request, key, { job_type: "email.campaign", payload: { ref: `c${i}` }, not_before: later }));
    const operator = createUser("operator", "pause");
    await signIn(page, operator, "/queues");

    await page.getByRole("button", { name: "Pause queue email.bulk" }).click();
    const dialog = page.getByRole("dialog", { name: "Pause queue email.bulk" });
    await expect(dialog.getByTestId("confirm-summary")).toContainText(/Pause queue email\.bulk: \d+ ready jobs stop being claimed/);
    const ready = Number((await dialog.getByTestId("confirm-summary").textContent())!.match(/: (\d+) ready/)![1]);
    expect(ready).toBeGreaterThanOrEqual(3);
    await expect(dialog.getByLabel("Reason (required, kept in the audit log)")).toBeFocused();
    await shot(page, "queue-pause-dialog");
    await page.keyboard.press("Escape");
    await expect(dialog).toBeHidden();
    await expect(page.getByRole("button", { name: "Pause queue email.bulk" })).toBeVisible();

    await page.getByRole("button", { name: "Pause queue email.bulk" }).click();
    await page.keyboard.press("Enter");
    await expect(dialog.getByRole("alert")).toHaveText("Give a reason: it is kept in the audit log.");
    await expect(page.getByRole("button", { name: "Resume queue email.bulk" })).toHaveCount(0);
    await dialog.getByLabel("Reason (required, kept in the audit log)").fill("e2e: campaign provider outage");
    await page.keyboard.press("Enter");
    await expect(dialog).toBeHidden();
    await expect(page.getByRole("status").filter({ hasText: "Paused queue email.bulk" })).toBeVisible();
    await expect(page.getByRole("button", { name: "Resume queue email.bulk" })).toBeVisible();

    await page.goto("/audit");
    await expect(
      page.getByRole("row").filter({ hasText: "queue.pause" }).filter({ hasText: operator.email }).filter({ hasText: "e2e: campaign provider outage" }),
    ).toBeVisible({ timeout: AUDIT_LOAD_MS });
    await page.goto("/queues");
    await page.getByRole("button", { name: "Resume queue email.bulk" }).click();
    await expect(page.getByRole("button", { name: "Pause queue email.bulk" })).toBeVisible();
    expect((await call(page, "jobs.cancel", { selection: { job_ids: held }, dry_run: false, reason: "e2e cleanup" })).status).toBe(200);
  });

  test("[POOLS][DRAIN]: Drain pool asks first, names its queues, and records the reason for each", async ({ page }) => {
    const operator = createUser("operator", "drain");
    await signIn(page, operator, "/pools");
    await page.getByRole("button", { name: "Drain pool agents" }).click();
    const dialog = page.getByRole("dialog", { name: "Drain pool agents" });
    await expect(dialog.getByTestId("confirm-summary")).toContainText(
      /Drain pool agents: 1 queue \(agent\.runs\) is paused, so \d+ ready jobs? stops? being claimed/,
    );
    await dialog.getByLabel("Reason (required, kept in the audit log)").fill("e2e: LLM provider maintenance");
    await shot(page, "pool-drain-dialog");
    await dialog.getByRole("button", { name: "Drain pool agents" }).click();
    await expect(page.getByRole("status").filter({ hasText: "Draining: agent.runs" })).toBeVisible();
    await expect(page.getByRole("button", { name: "Resume pool agents" })).toBeVisible();

    await page.goto("/audit");
    await expect(
      page.getByRole("row").filter({ hasText: "queue.pause" }).filter({ hasText: "agent.runs" }).filter({ hasText: "e2e: LLM provider maintenance" }),
    ).toBeVisible({ timeout: AUDIT_LOAD_MS });
    await page.goto("/pools");
    await page.getByRole("button", { name: "Resume pool agents" }).click();
    await expect(page.getByRole("button", { name: "Drain pool agents" })).toBeVisible();
  });

  test("[USERS][ROLE]: a role change asks first; Cancel keeps the role; confirming records the reason", async ({ page }) => {
    const user = createUser("viewer", "promoted");
    await signIn(page, ADMIN, "/users");
    const role = page.getByLabel(`Role of ${user.email}`);
    await role.selectOption("operator");
    const dialog = page.getByRole("dialog", { name: `Change the role of ${user.email}` });
    await expect(dialog.getByTestId("confirm-summary")).toContainText(`${user.email}: viewer → operator`);
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await expect(dialog).toBeHidden();
    await expect(role).toHaveValue("viewer");

    await role.selectOption("operator");
    await dialog.getByLabel("Reason (required, kept in the audit log)").fill("e2e: joins the on-call rota");
    await shot(page, "user-role-dialog");
    await dialog.getByRole("button", { name: `Make ${user.email} operator` }).click();
    await expect(page.getByRole("status").filter({ hasText: `${user.email} is now operator.` })).toBeVisible();
    await expect(role).toHaveValue("operator");

    await page.goto("/audit");
    await expect(page.getByRole("row").filter({ hasText: "user.update" }).filter({ hasText: "e2e: joins the on-call rota" })).toBeVisible({
      timeout: AUDIT_LOAD_MS,
    });
  });

  test("[WORKERS][LOST]: a SIGKILLed worker shows lost within seconds and the overview names its pool with the jobs waiting", async ({ page, request }) => {
    await signIn(page, ADMIN, "/");
    for (const [path, input] of [
      ["pools.create", { id: "e2e-lost", worker_concurrency: 2 }],
      ["queues.create", { id: "e2e-lost-q", pool_id: "e2e-lost" }],
      ["jobTypes.create", { id: "e2e.lost", queue_id: "e2e-lost-q" }],
    ] as const) {
      const res = await call(page, path, input);
      expect(res.status, res.text).toBe(200);
    }
    // One process, so that SIGKILL reaches the worker itself (the tsx binary would fork).
    const worker: ChildProcess = spawn(process.execPath, ["--import", "tsx", "apps/worker/src/bin/worker.ts", "--pool", "e2e-lost"], {
      env: { ...process.env, DATABASE_URL: e2eDatabaseUrl() },
      stdio: "ignore",
    });
    try {
      await page.goto("/pools");
      const pool = page.getByRole("article", { name: "e2e-lost" });
      const row = pool.getByRole("row").filter({ has: page.getByRole("cell", { name: String(worker.pid), exact: true }) });
      await expect(row.getByText("live")).toBeVisible({ timeout: 30_000 });

      worker.kill("SIGKILL");
      const killedAt = Date.now();
      await expect(row.getByText("lost")).toBeVisible({ timeout: 30_000 });
      // WORKER_LOST_AFTER_MS (10 s) + the page's 3 s refresh, with room for a loaded machine.
      expect(Date.now() - killedAt).toBeLessThan(28_000);
      await expect(pool.getByText("no live worker")).toBeVisible();
      await shot(page, "pools-worker-lost");

      await page.waitForTimeout(1_500); // the console's registry cache holds job types for 1 s
      for (let i = 0; i < 2; i++) await enqueue(request, key, { job_type: "e2e.lost", payload: { ref: `l${i}` } });
      await page.goto("/");
      // Other specs' pools may be listed too (the Dead letters spec's e2e_dlq once its worker stopped).
      await expect(page.getByTestId("health")).toContainText(/Not healthy — no live worker for pools? (.*, )?e2e-lost \(2 jobs waiting, 1 lost\)/);
      await shot(page, "overview-unhealthy");
    } finally {
      worker.kill("SIGKILL");
    }
  });

  test("[SIDEBAR]: on a long page the dark sidebar runs from the top to the bottom", async ({ page }) => {
    await signIn(page, ADMIN, "/audit");
    await page.getByRole("button", { name: "Load more" }).click();
    await expect(page.locator("tr[data-id]")).toHaveCount(100);
    const viewport = page.viewportSize()!;
    const full = await page.screenshot({ fullPage: true });
    const bottom = await pixel(page, full, 8, -8);
    expect(bottom.height).toBeGreaterThan(viewport.height * 2);
    expect(isDark(bottom), `sidebar column at the bottom of the page is rgb(${bottom.r}, ${bottom.g}, ${bottom.b})`).toBe(true);
    const middle = await pixel(page, full, 8, Math.round(bottom.height / 2));
    expect(isDark(middle)).toBe(true);

    await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
    const scrolled = await pixel(page, await page.screenshot(), 8, -8);
    expect(isDark(scrolled)).toBe(true);
    await shot(page, "audit-long-page");
  });

  test("[TABLE][PAGES][KEYBOARD]: a list longer than a page reads 50 rows at a time, and ↓/↑ move between the rows' buttons", async ({ page }) => {
    await signIn(page, ADMIN, "/tenants");
    const stamp = Date.now().toString(36);
    for (let i = 0; i < 55; i++) {
      const res = await call(page, "tenants.create", { id: `zz-e2e-page-${stamp}-${String(i).padStart(2, "0")}` });
      expect(res.status, res.text).toBe(200);
    }
    await page.reload();
    const table = page.getByRole("table", { name: "Tenants" });
    const rows = table.locator("tbody tr");
    await expect(rows).toHaveCount(50);
    const pages = page.getByRole("navigation", { name: "Pages of Tenants" });
    await expect(pages).toContainText(/Showing 1–50 of \d+/);
    await expect(pages.getByRole("button", { name: "Previous" })).toBeDisabled();

    const first = table.getByRole("button", { name: /^Edit tenant / }).first();
    const second = table.getByRole("button", { name: /^Edit tenant / }).nth(1);
    await first.focus();
    await page.keyboard.press("ArrowDown");
    await expect(second).toBeFocused();
    await page.keyboard.press("ArrowUp");
    await expect(first).toBeFocused();

    await pages.getByRole("button", { name: "Next" }).click();
    await expect(pages).toContainText(/Showing 51–\d+ of \d+/);
    await expect(table.getByRole("rowheader", { name: `zz-e2e-page-${stamp}-54` })).toBeVisible();
    await shot(page, "tenants-page-2");
  });
});
