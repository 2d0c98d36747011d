import { type APIRequestContext, expect, test } from "@playwright/test";
import pg from "pg";
import { ADMIN, createUser, signIn } from "./console";
import { e2eDatabaseUrl } from "./env";

// Issue 9, defects 2 (sign-in callbackUrl), 4, 6, 7 (sign-in) and 8, in Chromium against the
// built console.

/** next-auth's credentials sign-in as its client posts it, from a given client address. */
const postSignIn = async (request: APIRequestContext, email: string, password: string, address: string) => {
  const csrf = (await (await request.get("/api/auth/csrf")).json()) as { csrfToken: string };
  return request.post("/api/auth/callback/credentials", {
    headers: { "x-forwarded-for": address },
    form: { email, password, csrfToken: csrf.csrfToken, json: "true" },
  });
};

test.describe("[CONSOLE][SECURITY] redirects, sessions, sign-in throttle, headers", () => {
  test("[OPEN-REDIRECT]: a signed-in admin following a malicious sign-in link stays on the console", async ({ page }) => {
    await signIn(page, ADMIN);
    const consoleOrigin = new URL(page.url()).origin;
    for (const link of [
      "/signin?callbackUrl=%2F%09%2Fevil.example",
      "/signin?callbackUrl=%2F%2Fevil.example",
      "/signin?callbackUrl=%2F%5Cevil.example",
      "/signin?callbackUrl=https%3A%2F%2Fevil.example",
    ]) {
      await page.goto(link);
      await expect(page.getByTestId("role")).toBeVisible();
      expect(new URL(page.url()).origin, link).toBe(consoleOrigin);
      expect(page.url()).not.toContain("evil");
    }
    // A newline in the callback was a 500: now it is the overview.
    const reply = await page.goto("/signin?callbackUrl=%2F%0A%2Fx");
    expect(reply?.status()).toBeLessThan(500);
    expect(new URL(page.url()).origin).toBe(consoleOrigin);
  });

  test("[OPEN-REDIRECT]: signing in from a malicious link lands on the console's overview", async ({ page }) => {
    await page.goto("/signin?callbackUrl=%2F%09%2Fevil.example");
    const consoleOrigin = new URL(page.url()).origin;
    await page.getByLabel("Email").fill(ADMIN.email);
    await page.getByLabel("Password").fill(ADMIN.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.getByRole("heading", { name: "Overview" })).toBeVisible();
    expect(new URL(page.url()).origin).toBe(consoleOrigin);
    expect(new URL(page.url()).pathname).toBe("/");
  });

  test("[SESSIONS]: after signing out, a copy of the old session cookie is sent back to sign-in", async ({ page, browser }) => {
    const operator = createUser("operator", "signout");
    await signIn(page, operator);
    const copied = await page.context().cookies();
    await page.getByRole("button", { name: "Sign out" }).click();
    // next-auth sends the browser to NEXTAUTH_URL's sign-in page: slow on a loaded machine.
    await expect(page).toHaveURL(/\/signin/, { timeout: 20_000 });

    const thief = await browser.newContext();
    try {
      await thief.addCookies(copied);
      const other = await thief.newPage();
      // The session version is cached for a few seconds per process.
      await expect(async () => {
        await other.goto("/jobs");
        await expect(other).toHaveURL(/\/signin/, { timeout: 1000 });
      }).toPass({ timeout: 15_000 });
      const me = await other.request.get("/api/trpc/me.get");
      expect(me.status()).toBe(401);
    } finally {
      await thief.close();
    }
  });

  test("[THROTTLE]: after repeated wrong passwords even the right one gets 429 + Retry-After, and it is audited", async ({ page, request }) => {
    const user = createUser("viewer", "throttled");
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await postSignIn(request, user.email, "wrong-password-x", `198.51.100.${i + 1}`)).status());
    expect(statuses.slice(0, 10).every((s) => s === 200 || s === 401)).toBe(true);
    expect(statuses.slice(10)).toEqual([429, 429]);
    const right = await postSignIn(request, user.email, user.password, "198.51.100.99");
    expect(right.status()).toBe(429);
    expect(Number(right.headers()["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(((await right.json()) as { url: string }).url).toContain("error=TooManyAttempts");

    // The form says so, and does not sign in.
    await page.goto("/signin");
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill(user.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.getByText(/Too many failed sign-ins/)).toBeVisible();
    await expect(page).toHaveURL(/\/signin/);

    const db = new pg.Client({ connectionString: e2eDatabaseUrl() });
    await db.connect();
    try {
      const { rows } = await db.query(`SELECT actor FROM audit_log WHERE action = 'auth.signin_throttled' AND object_id = $1`, [user.email]);
      expect(rows.length).toBe(1);
    } finally {
      await db.end();
    }
  });

  test("[HEADERS]: pages carry a nonce CSP and the security headers, and still run their scripts", async ({ page }) => {
    const violations: string[] = [];
    page.on("console", (message) => {
      if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
    });
    const reply = await page.goto("/signin");
    const headers = reply!.headers();
    expect(headers["content-security-policy"]).toMatch(/script-src 'self' 'nonce-[A-Za-z0-9+/=]+' 'strict-dynamic'/);
    expect(headers["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(headers["x-frame-options"]).toBe("DENY");
    expect(headers["x-content-type-options"]).toBe("nosniff");
    expect(headers["referrer-policy"]).toBe("same-origin");
    expect(headers["permissions-policy"]).toContain("camera=()");
    expect(headers["strict-transport-security"]).toBeUndefined(); // plain http here
    const second = await page.request.get("/signin");
    expect(second.headers()["content-security-policy"]).not.toBe(headers["content-security-policy"]); // a fresh nonce
    // Hydrated React under the policy: signing in and the charts work.
    await signIn(page, ADMIN);
    await expect(page.locator(".recharts-wrapper").first()).toBeVisible();
    expect(violations).toEqual([]);
    const api = await page.request.get("/api/health");
    expect(api.headers()["x-content-type-options"]).toBe("nosniff");
  });

  test("[METRICS]: open without a token while the console listens on loopback (its default)", async ({ request }) => {
    const metrics = await request.get("/api/metrics");
    expect(metrics.status()).toBe(200);
    expect(await metrics.text()).toContain("porter_up");
  });
});
