import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { runPorter } from "./run-porter";

// `porter webhooks …` as a user runs them: a subprocess on the test database, as the runtime role;
// the secret is printed once (add, rotate) and never listed; the SSRF guard refuses loopback until
// an admin allows its network.
const db = useTestDatabase();
const porter = (...args: string[]) => {
  const { PORTER_ADMIN_PASSWORD: _p, PORTER_ADMIN_EMAIL: _e, PORTER_APP_DATABASE_URL: _a, PORTER_APP_PASSWORD: _ap, ...env } = process.env;
  return runPorter(args, { env: { ...env, DATABASE_URL: db.connectionString } });
};

beforeAll(async () => {
  await controlPlane(db.pool, { queues: [{ id: "cwh-q" }], tenants: ["cwh_t"] });
});

describe("porter webhooks", () => {
  it("add prints {id, secret}; list shows it without the secret; rotate prints a new one; deliveries lists attempts; remove deletes it", async () => {
    const added = await porter(
      "webhooks",
      "add",
      "--tenant",
      "cwh_t",
      "--url",
      "https://203.0.113.7/hook",
      "--events",
      "succeeded,dead",
      "--description",
      "orders",
      "--json",
    );
    expect(added.code, added.stderr).toBe(0);
    const { id, secret } = added.json as { id: string; secret: string };
    expect(Object.keys(added.json as object).sort()).toEqual(["id", "secret"]);
    expect(secret).toMatch(/^whsec_/);
    const listed = await porter("webhooks", "list", "--tenant", "cwh_t", "--json");
    expect(listed.code, listed.stderr).toBe(0);
    expect((listed.json as { webhooks: unknown[] }).webhooks).toMatchObject([{ id, events: ["succeeded", "dead"], description: "orders", enabled: true }]);
    expect(listed.stdout).not.toContain(secret);

    const rotated = await porter("webhooks", "rotate", id, "--overlap", "2h", "--json");
    expect(rotated.code, rotated.stderr).toBe(0);
    const r = rotated.json as { secret: string; previous_secret_expires_at: string };
    expect(r.secret).not.toBe(secret);
    expect(Date.parse(r.previous_secret_expires_at) - Date.now()).toBeGreaterThan(7000_000);
    expect((await porter("webhooks", "rotate", id, "--overlap", "8d", "--json")).code).not.toBe(0);

    await db.pool.query(
      `INSERT INTO webhook_deliveries (endpoint_id, job_id, event_id, event_type, subject_job_id, attempt, status_code, duration_ms)
       VALUES ($1, gen_random_uuid(), 'evt_1', 'job.dead', gen_random_uuid(), 1, 200, 12)`,
      [id],
    );
    const deliveries = await porter("webhooks", "deliveries", id, "--json");
    expect(deliveries.code, deliveries.stderr).toBe(0);
    expect(deliveries.json).toMatchObject({ items: [{ event_type: "job.dead", status_code: 200, attempt: 1 }], next_cursor: null });

    const removed = await porter("webhooks", "remove", id, "--json");
    expect(removed.json).toEqual({ id, deleted: true });
    expect((await porter("webhooks", "remove", id, "--json")).code).not.toBe(0);
  });

  it("refuses 127.0.0.1 until it is allowed; allowed lists it; disallow removes it", async () => {
    const add = () => porter("webhooks", "add", "--tenant", "cwh_t", "--url", "https://127.0.0.1:9/h", "--events", "dead", "--json");
    const refused = await add();
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("127.0.0.1, a loopback address");
    const allowed = await porter("webhooks", "allow", "127.0.0.1/32", "--note", "local receiver", "--json");
    expect(allowed.code, allowed.stderr).toBe(0);
    expect((await add()).code).toBe(0);
    const list = await porter("webhooks", "allowed", "--json");
    expect(list.json).toMatchObject({ networks: [{ cidr: "127.0.0.1/32", note: "local receiver" }] });
    expect((await porter("webhooks", "disallow", "127.0.0.1/32", "--json")).code).toBe(0);
    expect((await add()).code).not.toBe(0);
    expect((await porter("webhooks", "add", "--tenant", "cwh_t", "--url", "https://203.0.113.7/", "--json")).code).not.toBe(0);
  });

  it("every webhooks command has --help", async () => {
    for (const name of ["add", "list", "rotate", "remove", "deliveries", "allow", "disallow", "allowed"]) {
      const help = await porter("webhooks", name, "--help");
      expect(help.code, name).toBe(0);
      expect(help.stdout).toContain(`webhooks ${name}`);
      expect(help.stdout).toContain("--json");
    }
  });
});
