// Helpers of the console specs (e2e/console-*.spec.ts): sign-in, users of each role, producer calls.
import { mkdirSync } from "node:fs";
import { type APIRequestContext, expect, type Page } from "@playwright/test";
import { porterCli } from "./cli";

/** The admin e2e/serve.ts seeds (PORTER_ADMIN_PASSWORD). */
export const ADMIN = { email: "admin@porter.local", password: "e2e-admin-password" } as const;

export type Login = { email: string; password: string };

/** A fresh console user of `role`, created with `npm run porter -- users create`. */
export const createUser = (role: "viewer" | "operator" | "admin", label = role): Login => {
  const login = { email: `${label}-${Date.now()}-${Math.floor(Math.random() * 1e6)}@e2e.local`, password: `${role}-password-e2e` };
  porterCli("users", "create", "--email", login.email, "--role", role, "--password", login.password);
  return login;
};

/** Signs in through the sign-in form and waits for the console. */
export const signIn = async (page: Page, login: Login, landing = "/"): Promise<void> => {
  await page.goto(`/signin?callbackUrl=${encodeURIComponent(landing)}`);
  await page.getByLabel("Email").fill(login.email);
  await page.getByLabel("Password").fill(login.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByTestId("role")).toBeVisible();
};

/** A full-page screenshot under e2e/screenshots/ (gitignored), for a reviewer to look at every page. */
export const shot = async (page: Page, name: string): Promise<void> => {
  mkdirSync("e2e/screenshots", { recursive: true });
  await page.screenshot({ path: `e2e/screenshots/${name}.png`, fullPage: true });
};

/** Enqueues one job with a producer key over HTTP; returns its id. */
export const enqueue = async (request: APIRequestContext, key: string, body: Record<string, unknown>): Promise<string> => {
  const res = await request.post("/api/trpc/producer.enqueue", {
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    data: { tenant_id: "tenant_A", idempotency_key: `e2e-console-${Date.now()}-${Math.random()}`, ...body },
  });
  expect(res.status(), await res.text()).toBe(200);
  return ((await res.json()) as { result: { data: { job_id: string } } }).result.data.job_id;
};

/** A producer key for tenant_A, every job type (made with the CLI). */
export const producerKey = (): string => porterCli<{ key: string }>("keys", "create", "--tenant", "tenant_A", "--job-types", "*", "--name", "e2e-console").key;
