// The Dead letters workflow end to end (issue 12): jobs of one failure die into one group, an
// operator owns it, writes a note, dry-runs a redrive and redrives at 5 jobs/s, watches the progress
// reach 100%, and the redriven jobs succeed. The jobs run on a pool of their own (e2e_dlq) served
// by a worker this spec starts with e2e/dlq-handlers.ts: its upstream is "down" while a flag file
// exists, so the jobs die, and "fixed" once the spec removes it, so the redriven jobs succeed.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { expect, test } from "@playwright/test";
import pg from "pg";
import { ADMIN, createUser, enqueue, producerKey, shot, signIn } from "./console";
import { E2E_DATABASE, e2eDatabaseUrl } from "./env";

const POOL = "e2e_dlq";
const QUEUE = "e2e.dlq";
const JOB_TYPE = "e2e.invoice.sync";
const JOBS = 10;
const FLAG = resolve(`.porter/e2e-${E2E_DATABASE}-upstream-down`);

test.describe("[DLQ] the Dead letters workflow", () => {
  let db: pg.Pool;
  let worker: ChildProcess;
  let workerLog = "";

  test.beforeAll(async () => {
    db = new pg.Pool({ connectionString: e2eDatabaseUrl(), max: 2 });
    // One attempt: the first failure is a death.
    await db.query(`INSERT INTO pools (id, description) VALUES ($1, 'e2e: the Dead letters spec''s pool') ON CONFLICT (id) DO NOTHING`, [POOL]);
    await db.query(
      `INSERT INTO queues (id, pool_id, description, default_max_attempts, max_attempts) VALUES ($1, $2, 'e2e: jobs that die once', 1, 1) ON CONFLICT (id) DO NOTHING`,
      [QUEUE, POOL],
    );
    await db.query(`INSERT INTO job_types (id, queue_id, description) VALUES ($1, $2, 'e2e: syncs an invoice from billing') ON CONFLICT (id) DO NOTHING`, [
      JOB_TYPE,
      QUEUE,
    ]);
    mkdirSync(resolve(".porter"), { recursive: true });
    writeFileSync(FLAG, "the billing upstream is down\n");
    worker = spawn(process.execPath, ["--import", "tsx", "apps/worker/src/bin/worker.ts", "--pool", POOL, "--handlers", "e2e/dlq-handlers.ts"], {
      env: { ...process.env, DATABASE_URL: e2eDatabaseUrl(), PORTER_E2E_UPSTREAM_FLAG: FLAG, LOG_LEVEL: "warn" },
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
    rmSync(FLAG, { force: true });
    await db.end();
  });

  const states = async (ids: string[]): Promise<Record<string, number>> => {
    const { rows } = await db.query<{ state: string; n: number }>(
      `SELECT state, count(*)::int AS n FROM (SELECT state FROM jobs WHERE job_id = ANY($1::uuid[]) UNION ALL SELECT state FROM finished_jobs WHERE job_id = ANY($1::uuid[])) s GROUP BY state`,
      [ids],
    );
    return Object.fromEntries(rows.map((r) => [r.state, r.n]));
  };

  test("[DLQ][ALERTS]: an admin adds an alert rule on the queue's new deaths", async ({ page }) => {
    await signIn(page, ADMIN, "/alerts/rules");
    await page.goto("/alerts/rules");
    await expect(page.getByRole("heading", { name: "Add a rule" })).toBeVisible();
    await page.getByLabel("Fires when").selectOption("deaths_5m");
    await page.getByLabel("Queue").selectOption(QUEUE);
    await page.getByLabel(/^Threshold/).fill("5");
    await page.getByLabel(/^Threshold/).press("Enter");
    await expect(page.getByRole("row").filter({ hasText: QUEUE })).toContainText("new deaths in 5 min");
  });

  test("[DLQ][ADMIN]: an admin adds a reason code and archives it, and sets the alert webhook (its secret shown once, then only its last 4)", async ({
    page,
  }) => {
    await signIn(page, ADMIN, "/dead-letters/reason-codes");
    await page.goto("/dead-letters/reason-codes");
    await expect(page.getByRole("row").filter({ hasText: "dependency_outage" })).toBeVisible();
    const code = `e2e_${Date.now().toString(36)}`;
    await page.getByLabel(/^Code/).fill(code);
    await page.getByLabel("Label").fill("Upstream outage (e2e)");
    await page.getByLabel("Label").press("Enter");
    const codeRow = page.getByRole("row").filter({ hasText: code });
    await expect(codeRow).toContainText("in use");
    await codeRow.getByRole("button", { name: "Archive" }).click();
    await expect(codeRow).toContainText("archived");

    // Disabled, so no delivery job is enqueued while other specs run; deleted at the end.
    await page.goto("/alerts/rules");
    await page.getByLabel("URL (https://)").fill("https://hooks.e2e.internal/porter");
    await page.getByLabel("Tenant of the delivery jobs").selectOption("tenant_A");
    await page.getByLabel("Enabled", { exact: true }).last().uncheck();
    await page.getByRole("button", { name: "Create webhook" }).click();
    const secret = page.getByTestId("webhook-secret");
    await expect(secret).toContainText("whsec_");
    const shown = (await secret.locator("code").textContent()) ?? "";
    await expect(page.getByTestId("secret-hint")).toContainText(shown.slice(-4));
    await page.reload();
    await expect(page.getByTestId("webhook-secret")).toHaveCount(0);
    await expect(page.getByTestId("secret-hint")).toContainText(shown.slice(-4));
    await page.getByRole("button", { name: "Save and rotate the secret" }).click();
    await expect(page.getByTestId("webhook-secret")).toContainText("whsec_");
    expect(await page.getByTestId("webhook-secret").locator("code").textContent()).not.toBe(shown);
    await page.getByRole("button", { name: "Delete", exact: true }).last().click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete the webhook" }).click();
    await expect(page.getByText("No webhook yet")).toBeVisible();
  });

  test("[DLQ][REDRIVE]: an operator owns a failure group, notes it, dry-runs, redrives at 5 jobs/s, and the jobs succeed", async ({ page, request }) => {
    test.setTimeout(240_000);
    const key = producerKey();
    const ids: string[] = [];
    for (let i = 0; i < JOBS; i++) ids.push(await enqueue(request, key, { job_type: JOB_TYPE, payload: { invoice: `inv_${1000 + i * 37}` } }));
    await expect.poll(async () => (await states(ids)).DEAD ?? 0, { timeout: 90_000, message: `the jobs die (worker: ${workerLog.slice(-2000)})` }).toBe(JOBS);

    const operator = createUser("operator");
    await signIn(page, operator, "/dead-letters");
    await page.goto(`/dead-letters?type=${encodeURIComponent(JOB_TYPE)}`);
    const row = page.getByTestId("dlq-group").filter({ hasText: JOB_TYPE });
    await expect(row).toHaveCount(1);
    // The filter is the URL's: its field shows it.
    await expect(page.getByRole("form", { name: "Filter failure groups" }).getByLabel("Job type")).toHaveValue(JOB_TYPE);
    await expect(row).toContainText("UPSTREAM_UNAVAILABLE");
    await expect(row.getByRole("cell").nth(1)).toHaveText(String(JOBS)); // Count: the cell after "Job type · code"
    await expect(row).toContainText("unowned");
    // The sparkline is read by its name (deaths in 24 h), and is no tab stop.
    await expect(row.getByRole("img", { name: /in the last 24 h/ })).toHaveAttribute("aria-label", new RegExp(`: ${JOBS} in the last 24 h`));
    await expect(row.locator('.sparkline [tabindex]:not([tabindex^="-"])')).toHaveCount(0);
    await shot(page, "dlq-groups");

    await row.getByRole("link", { name: /^Group \d+/ }).click();
    await expect(page.getByRole("heading", { level: 1 })).toContainText(JOB_TYPE);
    await expect(page.getByTestId("dead-now")).toHaveText(String(JOBS));

    // Own it.
    await page.getByRole("button", { name: "Assign to me" }).click();
    await expect(page.getByTestId("group-owner")).toContainText(operator.email);
    // Say what is going on: Enter sends the note.
    const note = "Billing returned 503s during its deploy; redriving now that it is back.";
    await page.getByLabel(/^Add a note/).fill(note);
    await page.getByLabel(/^Add a note/).press("Enter");
    await expect(page.getByTestId("thread-event").filter({ hasText: note })).toBeVisible();
    await expect(page.getByTestId("thread-event").filter({ hasText: note })).toContainText(operator.email);

    // The upstream is back.
    rmSync(FLAG, { force: true });

    // Dry run: every job eligible, nothing changed.
    await page.getByRole("button", { name: "Dry run" }).click();
    await expect(page.getByTestId("dry-run-eligible")).toHaveText(String(JOBS));
    expect((await states(ids)).DEAD).toBe(JOBS);

    // Redrive at 5 jobs/s, confirmed.
    await page.getByLabel("Velocity (jobs per second)").fill("5");
    await page.getByLabel("Reason (kept in the audit log)").fill("billing upstream recovered");
    await page.getByRole("button", { name: `Redrive ${JOBS} jobs…` }).click();
    const dialog = page.getByRole("dialog", { name: "Redrive this group?" });
    await expect(dialog).toContainText(`${JOBS} dead jobs`);
    await expect(dialog).toContainText("5 per second");
    await dialog.getByRole("button", { name: "Start the redrive" }).click();
    await expect(dialog).toBeHidden();
    await expect(page).toHaveURL(/[?&]redrive=[0-9a-f-]{36}/);
    const redriveId = new URL(page.url()).searchParams.get("redrive")!;
    await expect(page.getByTestId("redrive-progress")).toBeVisible();
    await shot(page, "dlq-redrive-progress");
    await expect(page.getByTestId("redrive-percent")).toHaveText("100%", { timeout: 60_000 });
    await expect(page.locator(".live-redrive")).toContainText("completed");

    // Velocity held: 10 jobs at 5/s with a bucket of one batch (5) take at least a second.
    const { rows } = await db.query<{ n: number; spread_s: number }>(
      `SELECT count(*)::int AS n, extract(epoch FROM max(done_at) - min(done_at))::float8 AS spread_s FROM redrive_items WHERE redrive_id = $1 AND state = 'redriven'`,
      [redriveId],
    );
    expect(rows[0]!.n).toBe(JOBS);
    expect(rows[0]!.spread_s).toBeGreaterThanOrEqual(0.8);

    // The redriven jobs run and succeed.
    await expect
      .poll(async () => (await states(ids)).SUCCEEDED ?? 0, { timeout: 60_000, message: `the jobs succeed (worker: ${workerLog.slice(-2000)})` })
      .toBe(JOBS);
    await page.reload();
    await expect(page.getByTestId("dead-now")).toHaveText("0");
    await expect(page.getByText("No job of this group is dead now")).toBeVisible();
    // Every job that died into the group, where it is now: all succeeded after the redrive.
    await page.getByLabel("show redriven jobs too").check();
    await expect(page.locator('tr[data-state="SUCCEEDED"]')).toHaveCount(JOBS);

    // Close the loop: resolved, with its reason.
    await page.getByLabel("Status").selectOption("resolved");
    await page.getByLabel("Reason code").selectOption("dependency_outage");
    await page.getByRole("button", { name: "Save triage" }).click();
    await expect(page.getByRole("heading", { level: 1 })).toContainText("resolved");
    await expect(page.getByTestId("thread-event").filter({ hasText: "reason dependency_outage" })).toBeVisible();
    await expect(page.getByTestId("thread-event").filter({ hasText: note })).toBeVisible();
    await shot(page, "dlq-group-detail");

    // The redrive is listed with its progress.
    await page.goto("/dead-letters");
    await page.getByRole("link", { name: "Redrives" }).click();
    await expect(page.getByRole("row").filter({ hasText: redriveId.slice(-12) })).toContainText("completed");

    // The rule the admin added fired on the deaths: the banner and the alerts list say so.
    await page.goto("/dead-letters");
    await expect(page.getByTestId("alert-banner")).toBeVisible({ timeout: 45_000 });
    await page.getByTestId("alert-banner").getByRole("link", { name: "See alerts" }).click();
    await expect(page.getByRole("row").filter({ hasText: QUEUE }).first()).toBeVisible();
    await shot(page, "alerts");
  });

  test("[DLQ][REGRESSION][JOBS]: the upstream fails again — the resolved group reopens as a regression; the jobs browser filters by its error code and shows whole messages", async ({
    page,
    request,
  }) => {
    test.setTimeout(120_000);
    writeFileSync(FLAG, "the billing upstream is down again\n");
    const key = producerKey();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await enqueue(request, key, { job_type: JOB_TYPE, payload: { invoice: `inv_${9000 + i}` } }));
    await expect.poll(async () => (await states(ids)).DEAD ?? 0, { timeout: 60_000, message: `the jobs die (worker: ${workerLog.slice(-2000)})` }).toBe(3);

    const operator = createUser("operator");
    await signIn(page, operator, "/dead-letters");
    await page.goto(`/dead-letters?type=${encodeURIComponent(JOB_TYPE)}`);
    const row = page.getByTestId("dlq-group").filter({ hasText: JOB_TYPE });
    await expect(row).toHaveCount(1);
    await expect(row).toContainText("regression");
    await expect(row).toContainText("new");

    // The jobs browser: dead jobs with this error code, a message opened whole.
    await page.goto("/jobs?state=DEAD");
    await page.getByLabel("Error code").selectOption("UPSTREAM_UNAVAILABLE");
    await page.getByRole("button", { name: "Apply" }).click();
    await expect(page).toHaveURL(/[?&]code=UPSTREAM_UNAVAILABLE/);
    await expect(page.getByTestId("job-id")).toHaveCount(3);
    const first = page
      .getByRole("row")
      .filter({ has: page.getByTestId("job-id") })
      .first();
    await first.getByText("show full message").click();
    await expect(first.locator(".whole-text")).toBeVisible();
    await expect(first.locator(".whole-text")).toContainText(/returned 503 Service Unavailable \(request id req_[0-9a-f]{16}\)$/);
    await shot(page, "jobs-error-code");
    rmSync(FLAG, { force: true });
  });

  test("[DLQ][JOB]: an operator triages one dead job on its own page: assigns it to themselves with a note, which shows in the job's thread", async ({
    page,
  }) => {
    // A job the regression step left DEAD (its group's other jobs were redriven before).
    const { rows } = await db.query<{ job_id: string }>(
      `SELECT job_id FROM finished_jobs WHERE job_type = $1 AND state = 'DEAD' ORDER BY finished_at DESC LIMIT 1`,
      [JOB_TYPE],
    );
    expect(rows, "a dead job of the spec's type").toHaveLength(1);
    const jobId = rows[0]!.job_id;
    const operator = createUser("operator");
    await signIn(page, operator, `/jobs/${jobId}`);
    await page.goto(`/jobs/${jobId}`);
    await expect(page.getByRole("heading", { name: "Triage" })).toBeVisible();
    await expect(page.getByTestId("job-owner")).toContainText("nobody");
    const groupLink = page.getByRole("link", { name: /^Failure group \d+$/ });
    await expect(groupLink).toBeVisible();

    await page.getByRole("button", { name: "Assign to me" }).click();
    await expect(page.getByTestId("job-owner")).toContainText(operator.email);
    const note = "This invoice's customer was migrated mid-sync; checking it by hand before any redrive.";
    await page.getByLabel(/^Add a note/).fill(note);
    await page.getByLabel(/^Add a note/).press("Enter");
    const thread = page.getByTestId("job-thread");
    await expect(thread.getByTestId("thread-event").filter({ hasText: note })).toContainText(operator.email);
    await expect(thread.getByTestId("thread-event").filter({ hasText: "assigned" })).toBeVisible();
    await expect(page.getByLabel(/^Add a note/)).toHaveValue("");
    // The job's timeline (jobs.get) is refreshed with it.
    await expect(page.getByRole("region", { name: "Timeline" })).toContainText("dlq.note");
    await shot(page, "dlq-job-triage");

    // The job's own thread is not the group's: the note is not on the group page.
    await groupLink.click();
    await expect(page).toHaveURL(/\/dead-letters\/\d+$/);
    await expect(page.getByRole("heading", { level: 1 })).toContainText(JOB_TYPE);
    await expect(page.getByTestId("thread-event").filter({ hasText: note })).toHaveCount(0);
  });

  test("[DLQ][ROLES]: a viewer reads a failure group but has no triage or redrive controls", async ({ page }) => {
    const viewer = createUser("viewer");
    await signIn(page, viewer, "/dead-letters");
    await page.goto(`/dead-letters?type=${encodeURIComponent(JOB_TYPE)}&all=1`);
    await page
      .getByTestId("dlq-group")
      .first()
      .getByRole("link", { name: /^Group \d+/ })
      .click();
    await expect(page.getByRole("heading", { level: 1 })).toContainText(JOB_TYPE);
    await expect(page.getByRole("heading", { name: "Thread" })).toBeVisible();
    await expect(page.getByRole("button", { name: "Assign to me" })).toHaveCount(0);
    await expect(page.getByRole("button", { name: "Dry run" })).toHaveCount(0);
    await expect(page.getByRole("button", { name: "Add note" })).toHaveCount(0);
    await expect(page.getByRole("button", { name: "Save triage" })).toHaveCount(0);

    // A dead job's own triage: read, not changed.
    // (The job the [DLQ][JOB] step triaged.)
    const { rows } = await db.query<{ job_id: string }>(`SELECT job_id FROM dlq_job_triage ORDER BY updated_at DESC LIMIT 1`);
    expect(rows, "a job triaged on its own").toHaveLength(1);
    await page.goto(`/jobs/${rows[0]!.job_id}`);
    await expect(page.getByRole("heading", { name: "This job's thread" })).toBeVisible();
    await expect(page.getByTestId("job-thread").getByTestId("thread-event").first()).toBeVisible();
    await expect(page.getByText("Operators triage; you can read.")).toBeVisible();
    await expect(page.getByRole("button", { name: "Assign to me" })).toHaveCount(0);
    await expect(page.getByRole("button", { name: "Add note" })).toHaveCount(0);
    await expect(page.getByRole("button", { name: "Save triage" })).toHaveCount(0);
  });
});
