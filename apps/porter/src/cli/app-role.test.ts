import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { appPasswordPath, appRoleFor, resolveAppPassword } from "./app-role";
import { parseCliEnv } from "./env";

let home: string;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), "porter-home-"));
});
afterEach(() => rm(home, { recursive: true, force: true }));

const env = (vars: Record<string, string> = {}) => parseCliEnv(vars as NodeJS.ProcessEnv);

describe("the runtime role's password and URL", () => {
  it("takes the password of PORTER_APP_DATABASE_URL (never another), else PORTER_APP_PASSWORD, else .porter/app-password", async () => {
    await writeFile(appPasswordPath(home), "from-file\n");
    expect(await resolveAppPassword(env({ PORTER_APP_DATABASE_URL: "postgres://svc:in%40url@db/p", PORTER_APP_PASSWORD: "x" }), { home, generate: true })).toBe(
      "in@url",
    );
    expect(await resolveAppPassword(env({ PORTER_APP_DATABASE_URL: "postgres://svc@db/p" }), { home, generate: true })).toBeUndefined();
    expect(await resolveAppPassword(env({ PORTER_APP_PASSWORD: "from-env" }), { home, generate: true })).toBe("from-env");
    expect(await resolveAppPassword(env(), { home, generate: false })).toBe("from-file");
  });

  it("generates one into .porter/app-password (0600) only when asked, and keeps it", async () => {
    expect(await resolveAppPassword(env(), { home, generate: false })).toBeUndefined();
    const generated = await resolveAppPassword(env(), { home, generate: true });
    expect(generated).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect((await stat(appPasswordPath(home))).mode & 0o777).toBe(0o600);
    expect((await readFile(appPasswordPath(home), "utf8")).trim()).toBe(generated);
    expect(await resolveAppPassword(env(), { home, generate: true })).toBe(generated);
  });

  it("derives the runtime URL from the owner's, or uses PORTER_APP_DATABASE_URL and its user as the role", () => {
    expect(appRoleFor(env(), "postgres://owner:secret@db:5432/porter", "pw")).toEqual({
      spec: { name: "porter_app", password: "pw" },
      connectionString: "postgres://porter_app:pw@db:5432/porter",
    });
    expect(appRoleFor(env(), "postgres://owner@127.0.0.1/porter", undefined)).toEqual({
      spec: { name: "porter_app" },
      connectionString: "postgres://porter_app@127.0.0.1/porter",
    });
    const own = "postgres://svc_porter:pw@db/porter";
    expect(appRoleFor(env({ PORTER_APP_DATABASE_URL: own }), "postgres://owner@db/porter", "pw")).toEqual({
      spec: { name: "svc_porter", password: "pw" },
      connectionString: own,
    });
  });
});
