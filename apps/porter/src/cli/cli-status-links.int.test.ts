import { createHash } from "node:crypto";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { beforeAll, describe, expect, it } from "vitest";
import { runPorter } from "./run-porter";

// `porter tenants link|links|revoke-link` as a user runs them: a subprocess on the test database,
// as the runtime role; --json's last line is one object; the token is printed once, stored hashed.
const db = useTestDatabase();
const porter = (extraEnv: Record<string, string>, ...args: string[]) => {
  const {
    PORTER_ADMIN_PASSWORD: _p,
    PORTER_ADMIN_EMAIL: _e,
    PORTER_APP_DATABASE_URL: _a,
    PORTER_APP_PASSWORD: _ap,
    PORTER_PUBLIC_URL: _u,
    NEXTAUTH_URL: _n,
    ...env
  } = process.env;
  return runPorter(args, { env: { ...env, DATABASE_URL: db.connectionString, ...extraEnv } });
};

beforeAll(async () => {
  await controlPlane(db.pool, {
    queues: [{ id: "csl-q" }],
    jobTypes: [
      { id: "csl.a", queue: "csl-q" },
      { id: "csl.b", queue: "csl-q" },
    ],
    tenants: ["csl_t"],
  });
});

describe("porter tenants link / links / revoke-link", () => {
  it("link prints {id, url, token, expires_at}; links lists it without the token; revoke-link revokes it", async () => {
    const issued = await porter(
      { PORTER_PUBLIC_URL: "https://status.example.com/" },
      "tenants",
      "link",
      "--tenant",
      "csl_t",
      "--expires",
      "2h",
      "--job-types",
      "csl.a,csl.b",
      "--json",
    );
    expect(issued.code, issued.stderr).toBe(0);
    const link = issued.json as { id: string; url: string; token: string; expires_at: string };
    expect(Object.keys(link).sort()).toEqual(["expires_at", "id", "token", "url"]);
    expect(link.url).toBe(`https://status.example.com/status/link/${link.token}`);
    const row = (
      await db.pool.query(`SELECT token_hash, job_types, expires_at - created_at AS ttl, created_by FROM tenant_status_links WHERE id = $1`, [link.id])
    ).rows[0];
    expect(row.token_hash).toBe(createHash("sha256").update(link.token).digest("hex"));
    expect(row.job_types).toEqual(["csl.a", "csl.b"]);
    expect(row.ttl).toMatchObject({ hours: 2 });
    expect(row.created_by).toMatch(/^cli:/);

    const fallback = await porter({ PORT: "3999" }, "tenants", "link", "--tenant", "csl_t", "--json");
    expect(fallback.code, fallback.stderr).toBe(0);
    expect((fallback.json as { url: string }).url).toMatch(/^http:\/\/127\.0\.0\.1:3999\/status\/link\/[A-Za-z0-9_-]{43}$/);

    const listed = await porter({}, "tenants", "links", "--tenant", "csl_t", "--json");
    expect(listed.code, listed.stderr).toBe(0);
    const { links } = listed.json as { links: Array<{ id: string; state: string; job_types: string[] }> };
    expect(links.map((l) => l.id).sort()).toEqual([link.id, (fallback.json as { id: string }).id].sort());
    expect(listed.stdout).not.toContain(link.token);
    expect(links.find((l) => l.id === link.id)).toMatchObject({ state: "active", job_types: ["csl.a", "csl.b"] });

    const revoked = await porter({}, "tenants", "revoke-link", link.id, "--json");
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.json).toEqual({ id: link.id, revoked: true });
    const after = await porter({}, "tenants", "links", "--tenant", "csl_t");
    expect(after.code).toBe(0);
    expect(after.stdout).toMatch(new RegExp(`${link.id}\\s+revoked`));
    const again = await porter({}, "tenants", "revoke-link", link.id, "--json");
    expect(again.code).not.toBe(0);
  });

  it("refuses bad input without storing anything, and every command has --help", async () => {
    const count = async () => (await db.pool.query(`SELECT count(*)::int AS n FROM tenant_status_links`)).rows[0].n as number;
    const before = await count();
    for (const args of [
      ["tenants", "link", "--json"],
      ["tenants", "link", "--tenant", "nobody", "--json"],
      ["tenants", "link", "--tenant", "csl_t", "--expires", "3 weeks", "--json"],
      ["tenants", "link", "--tenant", "csl_t", "--expires", "100d", "--json"],
      ["tenants", "link", "--tenant", "csl_t", "--job-types", "nope", "--json"],
    ]) {
      const r = await porter({}, ...args);
      expect(r.code, args.join(" ")).not.toBe(0);
    }
    expect(await count()).toBe(before);
    for (const name of ["link", "links", "revoke-link"]) {
      const help = await porter({}, "tenants", name, "--help");
      expect(help.code).toBe(0);
      expect(help.stdout).toContain(`tenants ${name}`);
      expect(help.stdout).toContain("--json");
    }
  });
});
