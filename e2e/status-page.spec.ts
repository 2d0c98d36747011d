// The tenant status page end to end (issue 13, deliverable 3). An operator issues a link with the
// CLI; a tenant opens it in a fresh browser context (no console session); the producer API
// enqueues a job whose handler (e2e/status-handlers.ts, on a worker of this spec's own pool)
// reports progress in steps; the tenant watches its progress bar move and the job reach SUCCEEDED
// without reloading. Then the job page, framing (refused from a foreign origin, rendered from an
// origin the tenant allows), the page at 390 px, and the JavaScript budget.
import { type ChildProcess, spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { expect, type Page, test } from "@playwright/test";
import pg from "pg";
import { porterCli } from "./cli";
import { enqueue, producerKey, shot } from "./console";
import { e2eDatabaseUrl } from "./env";

const POOL = "e2e_status";
const QUEUE = "e2e.status";
const JOB_TYPE = "e2e.report.build";
const EMBED_TENANT = "e2e_status_embed";
/** The page's JavaScript (script resources, bytes as transferred): the brief's budget. */
const JS_BUDGET_BYTES = 150 * 1024;
type Issued = { id: string; url: string; token: string; expires_at: string };

/** A tiny site on its own 127.0.0.1 port whose page frames `src`. */
const framingSite = async (): Promise<{ server: Server; origin: string; page: (src: string) => string }> => {
  let src = "";
  const server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><title>embedder</title><h1>Our app</h1><iframe src="${src}" width="800" height="600" onload="document.title='loaded'"></iframe>`);
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    server,
    origin,
    page: (s: string) => {
      src = s;
      return `${origin}/`;
    },
  };
};

/** Follows a link in a fresh context (no console session): the tenant's browser. */
const tenantBrowser = async (browser: import("@playwright/test").Browser, link: Issued) => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(new URL(link.url).pathname);
  return { context, page };
};

/**
 * Sums the bytes of every script the page loads, as transferred (compressed) — or, where the browser
 * reports no transfer size, the decoded body (larger: the budget errs on the safe side).
 */
const scriptBytes = (page: Page) => {
  const pending: Promise<number>[] = [];
  page.on("requestfinished", (request) => {
    if (request.resourceType() !== "script") return;
    pending.push(request.sizes().then(async (s) => (s.responseBodySize > 0 ? s.responseBodySize : ((await (await request.response())?.body())?.length ?? 0))));
  });
  return async () => (await Promise.all(pending)).reduce((a, b) => a + b, 0);
};

test.describe("[STATUS-PAGE] the tenant status page", () => {
  let db: pg.Pool;
  let worker: ChildProcess;
  let workerLog = "";
  const sites: Server[] = [];

  test.beforeAll(async () => {
    db = new pg.Pool({ connectionString: e2eDatabaseUrl(), max: 2 });
    await db.query(`INSERT INTO pools (id, description) VALUES ($1, 'e2e: the status page spec''s pool') ON CONFLICT (id) DO NOTHING`, [POOL]);
    await db.query(`INSERT INTO queues (id, pool_id, description) VALUES ($1, $2, 'e2e: reports built in steps') ON CONFLICT (id) DO NOTHING`, [QUEUE, POOL]);
    await db.query(
      `INSERT INTO job_types (id, queue_id, description) VALUES ($1, $2, 'e2e: builds a report, reporting progress') ON CONFLICT (id) DO NOTHING`,
      [JOB_TYPE, QUEUE],
    );
    await db.query(`UPDATE tenants SET status_accent = '#0a7d5a' WHERE id = 'tenant_A'`);
    worker = spawn(process.execPath, ["--import", "tsx", "apps/worker/src/bin/worker.ts", "--pool", POOL, "--handlers", "e2e/status-handlers.ts"], {
      env: { ...process.env, DATABASE_URL: e2eDatabaseUrl(), LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    worker.stdout?.on("data", (c: Buffer) => (workerLog += c.toString()));
    worker.stderr?.on("data", (c: Buffer) => (workerLog += c.toString()));
  });

  test.afterAll(async () => {
    if (worker.exitCode === null) {
      const exited = new Promise((done) => worker.once("exit", done));
      worker.kill("SIGTERM");
      await exited;
    }
    for (const s of sites) s.close();
    await db.query(`UPDATE tenants SET status_accent = NULL WHERE id = 'tenant_A'`);
    await db.end();
  });

  test("[STATUS-PAGE]: a tenant watches a job's progress live to SUCCEEDED, then opens its page", async ({ browser, request }) => {
    const link = porterCli<Issued>("tenants", "link", "--tenant", "tenant_A", "--expires", "1h", "--job-types", JOB_TYPE);
    const context = await browser.newContext();
    const page = await context.newPage();
    const bytes = scriptBytes(page);
    await page.goto(new URL(link.url).pathname);
    await expect(page.getByRole("heading", { level: 1 })).toHaveText("Tenant A");
    // The tenant's accent, not the console's chrome.
    expect(await page.locator(".st-root").evaluate((el) => getComputedStyle(el).getPropertyValue("--st-accent").trim())).toBe("#0a7d5a");
    await expect(page.locator("header.sidebar")).toHaveCount(0);
    await expect(page.locator("[data-live-mode=live]")).toBeVisible({ timeout: 15_000 });

    const jobId = await enqueue(request, producerKey(), { job_type: JOB_TYPE, payload: { report: "q4-sales" } });
    const card = page.locator(`[data-job-id="${jobId}"]`);
    // The new job appears (a state event refreshes the list), its bar moves, it succeeds: no reload.
    await expect(card).toBeVisible({ timeout: 20_000 });
    const bar = card.getByRole("progressbar");
    await expect(bar).toHaveAttribute("aria-valuenow", /^(25|50|75)$/, { timeout: 20_000 });
    const seen = Number(await bar.getAttribute("aria-valuenow"));
    await expect(card.locator(".st-progress-text")).toContainText(/collect|aggregate|render|upload/);
    await shot(page, "status-page");
    // …and moves on (or the job is already done: the bar is gone once it succeeded).
    await expect
      .poll(
        async () =>
          (await card.locator("[data-role=state]").textContent()) === "succeeded"
            ? 101
            : Number((await bar.getAttribute("aria-valuenow", { timeout: 1000 }).catch(() => null)) ?? 0),
        { timeout: 30_000 },
      )
      .toBeGreaterThan(seen);
    await expect(card.locator("[data-role=state]")).toHaveText("succeeded", { timeout: 30_000 });
    expect(await page.evaluate(() => performance.getEntriesByType("navigation").length)).toBe(1);
    await expect(page.getByTestId("count-SUCCEEDED")).not.toHaveText("0");

    const total = await bytes();
    expect(total, `script bytes ${total}`).toBeGreaterThan(0);
    expect(total, `script bytes ${total}`).toBeLessThanOrEqual(JS_BUDGET_BYTES);
    console.log(`[STATUS-PAGE] JavaScript transferred: ${total} bytes (budget ${JS_BUDGET_BYTES})`);

    await card.getByRole("link", { name: JOB_TYPE }).click();
    await expect(page).toHaveURL(new RegExp(`/status/tenant_A/jobs/${jobId}$`));
    await expect(page.getByRole("heading", { level: 1 })).toHaveText(JOB_TYPE);
    const timeline = page.locator(".st-timeline");
    await expect(timeline).toContainText("Created");
    await expect(timeline).toContainText("Attempt started");
    await expect(timeline).toContainText("Succeeded");
    // Nothing of the worker or the payload.
    await expect(page.locator("body")).not.toContainText(/worker|q4-sales|lease/i);
    await shot(page, "status-job");
    await context.close();
  });

  test("[STATUS-PAGE]: the lists filter by URL query without JavaScript; another tenant's job page is a 404", async ({ browser, request }) => {
    const link = porterCli<Issued>("tenants", "link", "--tenant", "tenant_A", "--expires", "1h");
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    await page.goto(new URL(link.url).pathname);
    await page.getByRole("combobox", { name: "State" }).selectOption("SUCCEEDED");
    await page.getByRole("button", { name: "Filter" }).click();
    await expect(page).toHaveURL(/state=SUCCEEDED/);
    for (const badge of await page.locator(".st-jobs [data-role=state]").allTextContents()) expect(badge).toBe("succeeded");

    const otherJob = await (async () => {
      const key = porterCli<{ key: string }>("keys", "create", "--tenant", "tenant_B", "--job-types", "*", "--name", "e2e-status-b").key;
      const res = await request.post("/api/trpc/producer.enqueue", {
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        data: { tenant_id: "tenant_B", job_type: JOB_TYPE, payload: { report: "theirs" }, idempotency_key: `e2e-status-b-${Date.now()}` },
      });
      expect(res.status(), await res.text()).toBe(200);
      return ((await res.json()) as { result: { data: { job_id: string } } }).result.data.job_id;
    })();
    const res = await page.goto(`/status/tenant_A/jobs/${otherJob}`);
    expect(res?.status()).toBe(404);
    const unknown = await page.goto("/status/tenant_A/jobs/01900000-0000-7000-8000-000000000000");
    expect(unknown?.status()).toBe(404);
    await context.close();
  });

  test("[STATUS-PAGE]: framed from a foreign origin it is refused; from an origin the tenant allows it renders", async ({ browser }) => {
    const allowed = await framingSite();
    const foreign = await framingSite();
    sites.push(allowed.server, foreign.server);
    await db.query(
      `INSERT INTO tenants (id, name, status_origins, status_accent) VALUES ($1, 'Embed Co', $2, '#7a3cc2')
       ON CONFLICT (id) DO UPDATE SET status_origins = EXCLUDED.status_origins, name = EXCLUDED.name`,
      [EMBED_TENANT, [allowed.origin]],
    );
    const link = porterCli<Issued>("tenants", "link", "--tenant", EMBED_TENANT, "--expires", "1h");
    const { context, page } = await tenantBrowser(browser, link);
    const baseURL = new URL(page.url()).origin;
    const direct = await page.goto(`/status/${EMBED_TENANT}`);
    const csp = direct?.headers()["content-security-policy"] ?? "";
    expect(csp).toContain(`frame-ancestors ${allowed.origin}`);
    expect(direct?.headers()["x-frame-options"]).toBeUndefined();
    // A tenant without origins: 'none' and X-Frame-Options DENY, as the console.
    const plain = await context.request.get(`${baseURL}/status/tenant_A`);
    expect(plain.headers()["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(plain.headers()["x-frame-options"]).toBe("DENY");

    const src = `${baseURL}/status/${EMBED_TENANT}`;
    await page.goto(foreign.page(src));
    await page.waitForFunction(() => document.title === "loaded", undefined, { timeout: 15_000 }).catch(() => undefined);
    await expect(page.getByRole("heading", { name: "Our app" })).toBeVisible();
    await expect(page.frameLocator("iframe").getByRole("heading", { name: "Embed Co" })).toHaveCount(0);
    await shot(page, "status-embed-refused");

    await page.goto(allowed.page(src));
    await expect(page.frameLocator("iframe").getByRole("heading", { name: "Embed Co" })).toBeVisible({ timeout: 15_000 });
    await context.close();

    // How a tenant embeds it: the link itself as the frame's src, in a browser that never saw it.
    const fresh = await browser.newContext();
    const embedder = await fresh.newPage();
    const second = porterCli<Issued>("tenants", "link", "--tenant", EMBED_TENANT, "--expires", "1h");
    await embedder.goto(allowed.page(`${baseURL}${new URL(second.url).pathname}`));
    await expect(embedder.frameLocator("iframe").getByRole("heading", { name: "Embed Co" })).toBeVisible({ timeout: 15_000 });
    await fresh.close();
  });

  test("[STATUS-PAGE]: at 390 px there is no horizontal scroll", async ({ browser }) => {
    const link = porterCli<Issued>("tenants", "link", "--tenant", "tenant_A", "--expires", "1h");
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
    const page = await context.newPage();
    await page.goto(new URL(link.url).pathname);
    await expect(page.getByRole("heading", { level: 1 })).toHaveText("Tenant A");
    await expect(page.locator(".st-jobs, .st-empty").first()).toBeVisible();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await shot(page, "status-page-mobile");
    await context.close();
  });
});
