import { readFileSync } from "node:fs";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { expect, test } from "@playwright/test";
import { verifyWebhook } from "@porter/sdk";
import { porterCli } from "./cli";
import { ADMIN, shot, signIn } from "./console";
import { e2eWebhookCertDir } from "./env";

// Tenant webhooks (issue 13, deliverable 5) in the console: an admin allow-lists 127.0.0.1 (the
// receiver is local), an operator adds an endpoint on the tenant page (the secret shown once), a
// job of the tenant succeeds and the delivery — verified TLS to a real HTTPS receiver, signed —
// shows in the endpoint's delivery log; then rotate (new secret once) and delete (confirmed).
type Received = { headers: Record<string, string>; body: string };

test.describe("tenant webhooks", () => {
  const received: Received[] = [];
  let server: https.Server;
  let url: string;

  test.beforeAll(async () => {
    const dir = e2eWebhookCertDir();
    server = https.createServer({ key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        received.push({
          headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
          body: Buffer.concat(chunks).toString("utf8"),
        });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/porter`;
  });

  test.afterAll(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    try {
      porterCli("webhooks", "disallow", "127.0.0.1/32");
    } catch {
      // already removed
    }
  });

  test("[WEBHOOKS]: add an endpoint (secret shown once), see a delivery in the log, rotate, delete", async ({ page }) => {
    await signIn(page, ADMIN);
    await page.goto("/tenants/tenant_C");
    await expect(page.getByRole("heading", { name: "Webhooks" })).toBeVisible();
    await expect(page.getByText("No webhooks yet")).toBeVisible();

    // Loopback is refused until an admin allows its network: the form says why.
    await page.getByLabel("URL (https)").fill(url);
    await page.getByRole("button", { name: "Add webhook" }).click();
    await expect(page.getByText(/127\.0\.0\.1, a loopback address/)).toBeVisible();
    await page.getByLabel("Network (CIDR)").fill("127.0.0.1/32");
    await page.getByLabel("Note").fill("e2e receiver");
    await page.getByRole("button", { name: "Allow network" }).click();
    await expect(page.getByRole("table", { name: "Allowed networks" }).getByText("127.0.0.1/32")).toBeVisible();

    await page.getByLabel("URL (https)").fill(url);
    await page.getByLabel("Description").fill("e2e receiver");
    await page.getByRole("button", { name: "Add webhook" }).click();
    const shown = page.getByTestId("new-webhook-secret");
    await expect(shown).toHaveValue(/^whsec_/);
    const secret = await shown.inputValue();
    await page.getByRole("button", { name: "Done" }).click();
    await expect(page.getByTestId("new-webhook-secret")).toHaveCount(0);
    const table = page.getByRole("table", { name: "Webhook endpoints" });
    await expect(table.getByText("succeeded, dead")).toBeVisible();
    await expect(table).not.toContainText(secret);
    const endpointId = (await table
      .getByText(/^we_[0-9a-f]{18}$/)
      .first()
      .textContent())!.trim();
    expect(endpointId).toMatch(/^we_/);

    // A job of the tenant succeeds: the maintenance leader queues the delivery, the worker sends it.
    const job = porterCli<{ job_id: string }>("enqueue", "--type", "diag.sleep", "--tenant", "tenant_C", "--payload", '{"ms":10}');
    await expect.poll(() => received.length, { timeout: 30_000 }).toBeGreaterThan(0);
    const body = verifyWebhook(secret, received[0]!.headers, received[0]!.body);
    expect(body).toMatchObject({ type: "job.succeeded", data: { job_id: job.job_id, tenant_id: "tenant_C", status: "SUCCEEDED" } });

    await page.getByRole("button", { name: `Deliveries of ${endpointId}` }).click();
    const log = page.getByRole("table", { name: `Deliveries of ${endpointId}` });
    await expect(log.getByText("job.succeeded")).toBeVisible({ timeout: 15_000 });
    await expect(log.getByText("204")).toBeVisible();
    await expect(log.getByTestId("delivery-subject")).toHaveAttribute("href", `/jobs/${job.job_id}`);
    await shot(page, "tenant-webhooks");

    // Rotate: confirmed, the new secret shown once; the old one keeps signing during the overlap.
    await page.getByRole("button", { name: `Rotate the secret of ${endpointId}` }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Rotate secret" }).click();
    const rotated = page.getByTestId("new-webhook-secret");
    await expect(rotated).toHaveValue(/^whsec_/);
    expect(await rotated.inputValue()).not.toBe(secret);
    await page.getByRole("button", { name: "Done" }).click();
    await expect(table.getByText("(+ previous)")).toBeVisible();

    // Delete: confirmed; the list is empty again.
    await page.getByRole("button", { name: `Delete ${endpointId}` }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete webhook" }).click();
    await expect(page.getByText("No webhooks yet")).toBeVisible();
  });
});
