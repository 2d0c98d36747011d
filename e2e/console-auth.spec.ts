import { expect, test } from "@playwright/test";
import { ADMIN, createUser, shot, signIn } from "./console";

test.describe("[CONSOLE][AUTH] sign-in, roles and cross-site protection", () => {
  test("[SIGN-IN]: a wrong password is refused; the admin signs in and lands on the overview", async ({ page }) => {
    await page.goto("/jobs");
    await expect(page).toHaveURL(/\/signin/);
    await page.getByLabel("Email").fill(ADMIN.email);
    await page.getByLabel("Password").fill("not-the-password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.getByText("Invalid email or password")).toBeVisible();
    await shot(page, "signin-refused");

    await signIn(page, ADMIN);
    await expect(page.getByRole("heading", { name: "Overview" })).toBeVisible();
    await expect(page.getByTestId("role")).toHaveText("admin");
    await expect(page.getByRole("link", { name: "diag", exact: true })).toBeVisible();
    // The flow charts (four of them), or their "no traffic in this window" state.
    await expect(page.getByTestId("flow-charts").locator(".recharts-wrapper, .state-empty").first()).toBeVisible();
    await shot(page, "overview");
  });

  test("[ROLES][VIEWER]: a viewer sees no mutation buttons and is refused (403) when calling a mutation directly", async ({ page }) => {
    const viewer = createUser("viewer");
    await signIn(page, viewer, "/queues");
    await expect(page.getByTestId("role")).toHaveText("viewer");
    await expect(page.getByRole("link", { name: "diag", exact: true })).toBeVisible();
    await expect(page.getByRole("button", { name: /pause queue/i })).toHaveCount(0);
    await expect(page.getByRole("button", { name: "New queue" })).toHaveCount(0);
    await expect(page.getByRole("button", { name: /^Edit/ })).toHaveCount(0);
    await shot(page, "queues-as-viewer");

    await page.goto("/jobs");
    await expect(page.getByRole("heading", { name: "Jobs" })).toBeVisible();
    await expect(page.getByRole("toolbar", { name: "Bulk actions" })).toHaveCount(0);
    await expect(page.getByRole("link", { name: "Users" })).toHaveCount(0);

    // The same call the operator's Pause button makes, from the viewer's signed-in page.
    const status = await page.evaluate(async () => {
      const res = await fetch("/api/trpc/queues.pause", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ id: "diag" }),
      });
      return res.status;
    });
    expect(status).toBe(403);
    const redrive = await page.evaluate(async () => {
      const res = await fetch("/api/trpc/jobs.redrive", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ selection: { filter: {} }, dry_run: false }),
      });
      return res.status;
    });
    expect(redrive).toBe(403);
  });

  test("[CSRF]: a mutation with the admin's cookie but another Origin, or not JSON, is refused", async ({ page }) => {
    await signIn(page, ADMIN);
    const crossSite = await page.request.post("/api/trpc/queues.pause", {
      headers: { "content-type": "application/json", origin: "https://evil.example" },
      data: { id: "diag" },
    });
    expect(crossSite.status()).toBe(403);
    const formPost = await page.request.post("/api/trpc/queues.pause", {
      headers: { "content-type": "text/plain", origin: new URL(page.url()).origin },
      data: JSON.stringify({ id: "diag" }),
    });
    expect([403, 415]).toContain(formPost.status());
    const sameOrigin = await page.request.get(`/api/trpc/queues.get?input=${encodeURIComponent(JSON.stringify({ id: "diag" }))}`);
    expect(((await sameOrigin.json()) as { result: { data: { paused: boolean } } }).result.data.paused).toBe(false);
  });

  test("[NARROW]: the console works in a narrow window", async ({ page }) => {
    await page.setViewportSize({ width: 390, height: 844 });
    await signIn(page, ADMIN);
    await expect(page.getByRole("heading", { name: "Overview" })).toBeVisible();
    await expect(page.getByRole("link", { name: "diag", exact: true })).toBeVisible();
    await shot(page, "overview-narrow");
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Jobs" }).click();
    await expect(page.getByRole("heading", { name: "Jobs" })).toBeVisible();
    await expect(page.getByRole("button", { name: "Apply" })).toBeVisible();
    await expect(page.getByRole("button", { name: /^All/ })).toBeVisible();
    await shot(page, "jobs-narrow");
  });

  test("[SIGN-OUT]: signing out ends the session", async ({ page }) => {
    await signIn(page, ADMIN);
    await page.getByRole("button", { name: "Sign out" }).click();
    await expect(page).toHaveURL(/\/signin/);
    const res = await page.request.get("/api/trpc/me.get");
    expect(res.status()).toBe(401);
  });
});
