import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { killJobs } from "@porter/core/testing/dlq-fixtures";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { runPorter } from "./run-porter";

// `porter dlq groups|show|assign|reasons` as a user runs them: a subprocess on the test database,
// as the runtime role; --json's last line is one object.
const db = useTestDatabase();
const porter = (...args: string[]) => {
  const { PORTER_ADMIN_PASSWORD: _p, PORTER_ADMIN_EMAIL: _e, PORTER_APP_DATABASE_URL: _a, PORTER_APP_PASSWORD: _ap, ...env } = process.env;
  return runPorter(args, { env: { ...env, DATABASE_URL: db.connectionString } });
};
let http: string;
let quota: string;

beforeAll(async () => {
  await controlPlane(db.pool, { pool: "cd-pool", queues: [{ id: "cd-a" }, { id: "cd-b" }], tenants: ["cd_t1", "cd_t2"] });
  await db.pool.query(`INSERT INTO users (id, email, name, password_hash, role) VALUES ('u_oncall', 'oncall@example.com', 'On Call', 'x', 'operator')`);
  http = (
    await killJobs(db.appPool, {
      poolId: "cd-pool",
      jobType: "cd-a.job",
      n: 3,
      tenant: (i) => (i ? "cd_t1" : "cd_t2"),
      message: (i) => `Request failed with status code 503: GET https://api.example.com/v1/orders/${i}`,
      error: { code: "HTTP_503" },
    })
  ).groupIds[0]!;
  quota = (
    await killJobs(db.appPool, {
      poolId: "cd-pool",
      jobType: "cd-b.job",
      tenant: () => "cd_t1",
      message: () => "quota exceeded for cd_t1",
      error: { code: "QUOTA" },
    })
  ).groupIds[0]!;
});

describe("porter dlq", () => {
  it("dlq groups lists the groups in the issue's shape, filtered by queue, status, job type and owner", async () => {
    const all = await porter("dlq", "groups", "--json");
    expect(all.code, all.stderr).toBe(0);
    const { groups } = all.json as { groups: Array<Record<string, unknown>> };
    expect(groups.map((g) => g.id).sort()).toEqual([http, quota].sort());
    const g = groups.find((x) => x.id === http)!;
    expect(Object.keys(g).sort()).toEqual(
      [
        "id",
        "fingerprint",
        "job_type",
        "error_code",
        "sample_message",
        "count",
        "dead_now",
        "first_seen",
        "last_seen",
        "status",
        "owner",
        "reason_code",
        "tenants",
      ].sort(),
    );
    expect(g).toMatchObject({ job_type: "cd-a.job", error_code: "HTTP_503", count: 3, dead_now: 3, status: "new", owner: null, reason_code: null });
    expect(g.tenants).toEqual([
      { tenant_id: "cd_t1", count: 2 },
      { tenant_id: "cd_t2", count: 1 },
    ]);
    const byQueue = await porter("dlq", "groups", "--queue", "cd-b", "--json");
    expect((byQueue.json as { groups: Array<{ id: string }> }).groups.map((x) => x.id)).toEqual([quota]);
    const byType = await porter("dlq", "groups", "--job-type", "cd-a.job", "--status", "new", "--owner", "none", "--limit", "5", "--json");
    expect((byType.json as { groups: Array<{ id: string }> }).groups.map((x) => x.id)).toEqual([http]);

    const human = await porter("dlq", "groups");
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/GROUP\s+DEAD\s+COUNT\s+STATUS/);
    expect(human.stdout).toContain("Request failed with status code 503");

    const bad = await porter("dlq", "groups", "--status", "open", "--json");
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("--status must be one of");
  });

  it("dlq assign sets owner, status, reason and a note (audited); dlq show shows them with the thread and dead jobs", async () => {
    const run = await porter(
      "dlq",
      "assign",
      http,
      "--owner",
      "oncall@example.com",
      "--status",
      "investigating",
      "--reason",
      "dependency_outage",
      "--note",
      "provider 503s since 10:00",
      "--json",
    );
    expect(run.code, run.stderr).toBe(0);
    expect((run.json as { group: Record<string, unknown> }).group).toMatchObject({
      id: http,
      owner: "oncall@example.com",
      status: "investigating",
      reason_code: "dependency_outage",
    });
    const audit = await db.pool.query(`SELECT actor, action FROM audit_log WHERE object_type = 'dlq_group' AND object_id = $1`, [http]);
    expect(audit.rows).toEqual([{ actor: expect.stringMatching(/^cli:/), action: "dlq.group.triage" }]);

    const mine = await porter("dlq", "groups", "--owner", "oncall@example.com", "--json");
    expect((mine.json as { groups: Array<{ id: string; owner: string }> }).groups).toEqual([
      expect.objectContaining({ id: http, owner: "oncall@example.com" }),
    ]);

    const show = await porter("dlq", "show", http, "--jobs", "2", "--json");
    expect(show.code, show.stderr).toBe(0);
    const shown = show.json as { group: { owner: string; events: Array<{ kind: string; body: string }>; worker_versions: unknown[] }; jobs: unknown[] };
    expect(shown.group.owner).toBe("oncall@example.com");
    expect(shown.group.events.map((e) => e.kind)).toEqual(["assigned", "reason", "status", "note"]);
    expect(shown.group.worker_versions).toEqual([{ version: "fixture-1", count: 3 }]);
    expect(shown.jobs).toHaveLength(2);
    const text = await porter("dlq", "show", http);
    expect(text.stdout).toContain("provider 503s since 10:00");
    expect(text.stdout).toContain("owner oncall@example.com");

    const ignore = await porter("dlq", "assign", quota, "--ignore-more", "10", "--json");
    expect(ignore.code, ignore.stderr).toBe(0);
    expect((await db.pool.query(`SELECT status::text, ignore_remaining FROM dlq_groups WHERE id = $1`, [quota])).rows[0]).toEqual({
      status: "ignored",
      ignore_remaining: 10,
    });
  });

  it("refuses --owner me for a CLI user that is not an e-mail, unknown owners and codes, and changes nothing", async () => {
    const before = (await db.pool.query(`SELECT * FROM dlq_groups WHERE id = $1`, [quota])).rows[0];
    const me = await porter("dlq", "assign", quota, "--owner", "me", "--json");
    expect(me.code).not.toBe(0);
    expect(me.stderr).toContain("--owner <email>");
    const ghost = await porter("dlq", "assign", quota, "--owner", "ghost@example.com", "--json");
    expect(ghost.code).not.toBe(0);
    expect(ghost.stderr).toContain("no console user");
    const code = await porter("dlq", "assign", quota, "--reason", "made_up", "--json");
    expect(code.code).not.toBe(0);
    expect(code.stderr).toContain("unknown reason code");
    const nothing = await porter("dlq", "assign", quota);
    expect(nothing.code).not.toBe(0);
    const unknown = await porter("dlq", "show", "987654");
    expect(unknown.code).not.toBe(0);
    expect((await db.pool.query(`SELECT * FROM dlq_groups WHERE id = $1`, [quota])).rows[0]).toEqual(before);
  });

  it("dlq reasons lists the seeded codes; every dlq command has --help", async () => {
    const run = await porter("dlq", "reasons", "--json");
    expect(run.code, run.stderr).toBe(0);
    expect((run.json as { codes: Array<{ code: string }> }).codes.map((c) => c.code)).toEqual(
      expect.arrayContaining(["bug", "bad_input", "dependency_outage", "config", "capacity", "permission", "unknown"]),
    );
    for (const cmd of ["groups", "show", "assign", "reasons"]) {
      const help = await porter("dlq", cmd, "--help");
      expect(help.code, help.stderr).toBe(0);
      expect(help.stdout).toContain(`Usage: npm run porter -- dlq ${cmd}`);
      expect(help.stdout).toContain("--json");
    }
  });
});
