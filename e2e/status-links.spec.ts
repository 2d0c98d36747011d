import { expect, test } from "@playwright/test";
import { porterCli } from "./cli";
import { ADMIN, signIn } from "./console";

// Tenant status links (issue 13, deliverable 2) end to end: an operator issues a link with the
// CLI, a fresh browser context (no console session) follows it and lands on /status/<tenant>
// without the token in the URL and sees the counts; another tenant's page is a 404 with that
// cookie; after `tenants revoke-link` the page and the link are refused.
type Issued = { id: string; url: string; token: string; expires_at: string };

test.describe("tenant status links", () => {
  test("[STATUS-LINK]: follow a link → /status/<tenant> with counts; other tenant 404; revoked → refused", async ({ browser }) => {
    const link = porterCli<Issued>("tenants", "link", "--tenant", "tenant_A", "--expires", "1h");
    expect(Object.keys(link).sort()).toEqual(["expires_at", "id", "token", "url"]);
    const path = new URL(link.url).pathname;
    expect(path).toBe(`/status/link/${link.token}`);

    const context = await browser.newContext();
    const page = await context.newPage();
    const landed = await page.goto(path);
    expect(page.url()).toMatch(/\/status\/tenant_A$/);
    expect(page.url()).not.toContain(link.token);
    expect(landed?.status()).toBe(200);
    expect(landed?.headers()["cache-control"]).toContain("no-store");
    await expect(page.getByRole("heading", { level: 1 })).toHaveText("Tenant A");
    await expect(page.getByRole("region", { name: "Jobs by state" })).toBeVisible();
    await expect(page.getByTestId("count-READY")).toHaveText(/^\d+$/);
    const cookies = await context.cookies();
    const cookie = cookies.find((c) => c.name === "porter_status");
    expect(cookie).toMatchObject({ path: "/status/tenant_A", httpOnly: true, sameSite: "Lax" });
    expect(cookie?.value).not.toContain(link.token);

    // Another tenant's page: the cookie is not even sent there (its path), and nothing else authorises it.
    const other = await page.goto("/status/tenant_B");
    expect(other?.status()).toBe(404);

    porterCli("tenants", "revoke-link", link.id);
    const after = await page.goto("/status/tenant_A");
    expect(after?.status()).toBe(404);
    const again = await page.goto(path);
    expect(again?.status()).toBe(404);
    await context.close();
  });

  test("[STATUS-LINK]: an operator issues a link in the console; it is shown once and listed", async ({ page }) => {
    await signIn(page, ADMIN);
    await page.goto("/tenants/tenant_B");
    await page.getByRole("button", { name: "Issue status link" }).click();
    const shown = page.getByTestId("new-status-link");
    await expect(shown).toHaveValue(/\/status\/link\/[A-Za-z0-9_-]{43}$/);
    const url = await shown.inputValue();
    await expect(page.getByRole("button", { name: /Revoke status link sl_/ }).first()).toBeVisible();
    const context = await page.context().browser()!.newContext();
    const tenant = await context.newPage();
    await tenant.goto(new URL(url).pathname);
    expect(tenant.url()).toMatch(/\/status\/tenant_B$/);
    await expect(tenant.getByRole("heading", { level: 1 })).toHaveText("Tenant B");
    await context.close();
  });
});
