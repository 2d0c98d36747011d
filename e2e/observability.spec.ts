// The console's flow charts and "needs attention" end to end (issue 14, deliverable 3). A burst of
// jobs lands on a queue with a concurrency cap of 2 and a 5 s wait target, served by a worker of
// this spec's own pool: the backlog builds, the overview lists the queue AT RISK with its numbers,
// the charts render (an svg each, and their screen-reader tables have rows); then the backlog
// drains and the row goes. Screenshots of the overview and the queue page while building and after.
import { type ChildProcess, spawn } from "node:child_process";
import { expect, type Page, test } from "@playwright/test";
import pg from "pg";
import { ADMIN, producerKey, shot, signIn } from "./console";
import { e2eDatabaseUrl } from "./env";

const POOL = "e2e_obs";
const QUEUE = "e2e.obs";
const JOB_TYPE = "e2e.obs.work";
/** 50 jobs × 1 s on 2 slots: about 25 s of backlog against a 5 s target, drained in about 25 s. */
const JOBS = 50;

/** The four charts drew their svg, and each screen-reader table has a row per step. */
const expectCharts = async (page: Page) => {
  const charts = page.getByTestId("flow-charts");
  for (const id of ["arrivals", "wait", "run", "backlog"]) {
    const chart = charts.getByTestId(`flow-chart-${id}`);
    await expect(chart.locator("svg.recharts-surface").first()).toBeVisible({ timeout: 15_000 });
    expect(await chart.locator("figcaption tbody tr").count(), id).toBeGreaterThan(0);
  }
  // The window picker is a radio group; no horizontal overflow at 1280 px.
  await expect(charts.getByRole("radio", { name: "1 h" })).toBeChecked();
  expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
};

test.describe("[OBSERVABILITY] flow charts and what needs attention", () => {
  let db: pg.Pool;
  let worker: ChildProcess;
  let workerLog = "";

  test.beforeAll(async () => {
    db = new pg.Pool({ connectionString: e2eDatabaseUrl(), max: 2 });
    await db.query(`INSERT INTO pools (id, description) VALUES ($1, 'e2e: the observability spec''s pool') ON CONFLICT (id) DO NOTHING`, [POOL]);
    await db.query(
      `INSERT INTO queues (id, pool_id, description, concurrency_cap, target_wait_s) VALUES ($1, $2, 'e2e: a capped queue with a wait target', 2, 5)
       ON CONFLICT (id) DO UPDATE SET concurrency_cap = 2, target_wait_s = 5`,
      [QUEUE, POOL],
    );
    await db.query(`INSERT INTO job_types (id, queue_id, description) VALUES ($1, $2, 'e2e: 1 s of work') ON CONFLICT (id) DO NOTHING`, [JOB_TYPE, QUEUE]);
    worker = spawn(process.execPath, ["--import", "tsx", "apps/worker/src/bin/worker.ts", "--pool", POOL, "--handlers", "e2e/observability-handlers.ts"], {
      env: { ...process.env, DATABASE_URL: e2eDatabaseUrl(), LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    worker.stdout?.on("data", (c: Buffer) => (workerLog += c.toString()));
    worker.stderr?.on("data", (c: Buffer) => (workerLog += c.toString()));
    // The worker is live (its heartbeat row) before the burst: the queue has concurrency to project with.
    await expect
      .poll(async () => (await db.query("SELECT 1 FROM workers WHERE pool_id = $1 AND stopped_at IS NULL", [POOL])).rowCount, { timeout: 30_000 })
      .toBeGreaterThan(0);
  });

  test.afterAll(async () => {
    if (worker.exitCode === null) {
      const exited = new Promise((done) => worker.once("exit", done));
      worker.kill("SIGTERM");
      await exited;
    }
    await db.end();
  });

  test("[OBSERVABILITY][AT-RISK]: a building backlog is listed at risk with its numbers, the charts render, and it leaves the list once drained", async ({
    page,
    request,
  }) => {
    test.setTimeout(90_000);
    const key = producerKey();
    const run = Date.now();
    const res = await request.post("/api/trpc/producer.enqueueBatch", {
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      data: {
        jobs: Array.from({ length: JOBS }, (_, n) => ({ job_type: JOB_TYPE, tenant_id: "tenant_A", idempotency_key: `e2e-obs-${run}-${n}`, payload: { n } })),
      },
    });
    expect(res.status(), await res.text()).toBe(200);

    await signIn(page, ADMIN, "/");
    const row = page.getByTestId(`attention-${QUEUE}`);
    // At risk once the first runs give a mean run time: ready × 1 s ÷ 2 > 5 s.
    await expect(row).toHaveAttribute("data-status", "at_risk", { timeout: 30_000 });
    await expect(row).toContainText("AT RISK");
    await expect(row).toContainText(/projected wait .+ over the 5(\.0)? s target/);
    await expect(row).toContainText(/ready · \d+ running of 2/);
    // At risk is listed before anything merely growing.
    const statuses = await page
      .getByTestId("needs-attention")
      .locator("li")
      .evaluateAll((els) => els.map((e) => e.getAttribute("data-status")));
    expect(statuses.indexOf("growing") === -1 || statuses.lastIndexOf("at_risk") < statuses.indexOf("growing")).toBe(true);
    await expectCharts(page);
    await shot(page, "observability-overview-building");

    await row.getByRole("link", { name: `queue ${QUEUE}` }).click();
    await expect(page.getByRole("heading", { level: 1 })).toContainText(`Queue ${QUEUE}`);
    const signals = page.getByTestId("queue-signals");
    await expect(signals).toContainText("Target wait");
    await expect(signals.getByRole("link", { name: /^\d+/ })).toHaveAttribute("href", `/dead-letters?queue=${encodeURIComponent(QUEUE)}`);
    await expect(page.getByRole("table", { name: /Tenants of e2e\.obs/ }).getByRole("link", { name: "tenant_A" })).toBeVisible({ timeout: 15_000 });
    await expect(page.getByRole("table", { name: /Job types of e2e\.obs/ })).toContainText(JOB_TYPE);
    await expectCharts(page);
    await shot(page, "observability-queue-building");

    // Drained: nothing ready, the queue leaves the list.
    await expect
      .poll(async () => Number((await db.query("SELECT count(*) AS n FROM jobs WHERE queue_id = $1", [QUEUE])).rows[0].n), {
        timeout: 45_000,
        intervals: [1_000],
      })
      .toBe(0);
    await expect(signals).toContainText("Keeping up", { timeout: 15_000 });
    await expect(signals).toContainText("empty");
    await shot(page, "observability-queue-drained");
    await page.goto("/");
    await expect(page.getByTestId("needs-attention")).toBeVisible();
    await expect(page.getByTestId(`attention-${QUEUE}`)).toHaveCount(0);
    await expectCharts(page);
    await shot(page, "observability-overview-drained");
    expect(workerLog).not.toMatch(/"level":"error"|ERROR/);
  });

  test("[OBSERVABILITY][404]: an unknown queue's page says so", async ({ page }) => {
    await signIn(page, ADMIN, "/queues/no-such-queue");
    await expect(page.getByTestId("queue-not-found")).toContainText("No such queue");
  });
});
