import { expect, test } from "@playwright/test";
import { porterCli } from "./cli";
import { ADMIN, signIn } from "./console";

type Key = { key: string };
type Status = { status: string; timeline: Array<{ kind: string }>; result: unknown; error: { code: string } | null };

const trpc = (path: string) => `/api/trpc/${path}`;

test.describe("[CORE] a producer's job runs to a durable result", () => {
  let key: string;
  test.beforeAll(() => {
    key = porterCli<Key>("keys", "create", "--tenant", "tenant_A", "--job-types", "*", "--name", "e2e").key;
  });

  test("[HEALTH]: the console reports the process and the database up", async ({ request }) => {
    const res = await request.get("/api/health");
    expect(res.status()).toBe(200);
    expect(await res.json()).toMatchObject({ status: "ok" });
  });

  test("[ENQUEUE][SUCCEEDED]: a job enqueued over HTTP reaches SUCCEEDED with its timeline", async ({ request, page }) => {
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    const enqueue = await request.post(trpc("producer.enqueue"), {
      headers,
      data: { job_type: "diag.sleep", payload: { ms: 50 }, idempotency_key: `e2e-${Date.now()}` },
    });
    expect(enqueue.status()).toBe(200);
    const { job_id } = (await enqueue.json()).result.data as { job_id: string };

    let status: Status | undefined;
    await expect
      .poll(
        async () => {
          const res = await request.get(`${trpc("producer.get")}?input=${encodeURIComponent(JSON.stringify({ job_id }))}`, { headers });
          status = (await res.json()).result.data as Status;
          return status.status;
        },
        { timeout: 30_000 },
      )
      .toBe("SUCCEEDED");
    expect(status!.timeline.map((e) => e.kind)).toEqual(["enqueued", "claimed", "succeeded"]);

    await signIn(page, ADMIN); // the console's pages are for signed-in users
    await page.goto("/");
    await expect(page.getByText("diag", { exact: true }).first()).toBeVisible();
    await page.screenshot({ path: "e2e/screenshots/home.png", fullPage: true });
  });

  test("[DLQ]: a permanent failure lands DEAD with a structured error, and a redrive brings it back", async ({ request }) => {
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    const enqueue = await request.post(trpc("producer.enqueue"), {
      headers,
      data: { job_type: "diag.fail", payload: { mode: "permanent" }, idempotency_key: `e2e-dead-${Date.now()}` },
    });
    const { job_id } = (await enqueue.json()).result.data as { job_id: string };
    await expect.poll(async () => porterCli<Status>("jobs", "get", job_id).status, { timeout: 30_000 }).toBe("DEAD");
    expect(porterCli<Status>("jobs", "get", job_id).error?.code).toBeTruthy();
    // A durable redrive (--force: the error is permanent); one job, so its first batch finishes it.
    const redrive = porterCli<{ redrive_id: string; status: string; total: number }>("redrive", job_id, "--force", "--reason", "e2e");
    expect(redrive).toMatchObject({ status: "completed", total: 1 });
    expect(porterCli<Status>("jobs", "get", job_id).status).not.toBe("DEAD");
  });

  test("[AUTH]: a request without a key is refused with 401 and stores nothing", async ({ request }) => {
    const res = await request.post(trpc("producer.enqueue"), {
      headers: { "content-type": "application/json" },
      data: { job_type: "diag.sleep", payload: { ms: 1 }, idempotency_key: "no-key" },
    });
    expect(res.status()).toBe(401);
  });
});
