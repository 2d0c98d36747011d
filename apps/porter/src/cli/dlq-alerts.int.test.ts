import { useTestDatabase } from "@porter/db/testing/test-database";
import { describe, expect, it } from "vitest";
import { seedDemo } from "../seed/demo";
import { runPorter } from "./run-porter";

const db = useTestDatabase();

const porter = (...args: string[]) => {
  const { PORTER_ADMIN_PASSWORD: _p, PORTER_ADMIN_EMAIL: _e, PORTER_APP_DATABASE_URL: _a, PORTER_APP_PASSWORD: _ap, ...env } = process.env;
  return runPorter(args, { env: { ...env, DATABASE_URL: db.connectionString } });
};

describe("porter dlq alerts", () => {
  it("[DLQ-ALERTS]: lists the alerts newest first (a table, or --json as the last line), filters by --state; a bad state is exit 2", async () => {
    await seedDemo(db.prisma, { actor: "seed", adminEmail: "admin@porter.local" });
    const { rows } = await db.pool.query<{ id: string }>(`SELECT id::text FROM alert_rules WHERE kind = 'deaths_5m'`);
    await db.pool.query(
      `INSERT INTO alerts (rule_id, subject, state, value, message, fired_at, resolved_at, updated_at)
       VALUES ($1, '*', 'resolved', 12, '12 job(s) died in the last 5 minutes in all queues (more than 10)', now() - interval '1 hour', now() - interval '50 minutes', now()),
              ($1, '*', 'firing', 31, '31 job(s) died in the last 5 minutes in all queues (more than 10)', now(), NULL, now())`,
      [rows[0]!.id],
    );
    const all = await porter("dlq", "alerts", "--json");
    expect(all.code, all.stderr).toBe(0);
    const page = all.json as { alerts: Array<{ state: string; value: number; kind: string; subject: string }>; firing: number; next_cursor: string | null };
    expect(page.firing).toBe(1);
    expect(page.alerts.map((a) => [a.state, a.value, a.kind, a.subject])).toEqual([
      ["firing", 31, "deaths_5m", "*"],
      ["resolved", 12, "deaths_5m", "*"],
    ]);
    const lastLine = all.stdout.trim().split("\n").at(-1)!;
    expect(JSON.parse(lastLine)).toEqual(page);

    const resolved = await porter("dlq", "alerts", "--state", "resolved", "--json");
    expect((resolved.json as typeof page).alerts.map((a) => a.state)).toEqual(["resolved"]);
    const human = await porter("dlq", "alerts", "--state", "firing");
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/firing\s+deaths_5m\s+\*\s+\*\s+31\s/);
    expect(human.stdout).toContain("1 alert(s) firing");

    const bad = await porter("dlq", "alerts", "--state", "burning", "--json");
    expect(bad.code).toBe(2);
    expect(bad.stderr + bad.stdout).toContain("--state must be firing or resolved");
    const help = await porter("dlq", "alerts", "--help");
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Usage: npm run porter -- dlq alerts");
  });
});
