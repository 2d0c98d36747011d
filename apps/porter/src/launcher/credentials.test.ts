import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { presentCredentials } from "./credentials";

const PASSWORD = "generated-password-canary";
const KEY = "pk_canary.secretpart";
const lines = [`  admin login:  admin@porter.local / ${PASSWORD}   (generated; shown only this once)`, `  producer key: ${KEY}   (shown only this once)`];
const dirs: string[] = [];
const home = () => {
  const dir = mkdtempSync(join(tmpdir(), "porter-credentials-"));
  dirs.push(dir);
  return join(dir, ".porter");
};

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("the start banner's one-time credentials (issue 9, defect 9)", () => {
  it("on a terminal they are shown, and no file is written", async () => {
    const path = join(home(), "credentials.txt");
    expect(await presentCredentials({ lines, isTty: true, path })).toEqual(lines);
    expect(() => statSync(path)).toThrow();
  });

  it("redirected, the banner only names a 0600 file that holds them", async () => {
    const path = join(home(), "credentials.txt");
    const shown = await presentCredentials({ lines, isTty: false, path, cwd: join(path, "../..") });
    const banner = shown.join("\n");
    expect(banner).not.toContain(PASSWORD);
    expect(banner).not.toContain(KEY);
    expect(banner).toContain(".porter/credentials.txt");
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const saved = readFileSync(path, "utf8");
    expect(saved).toContain(PASSWORD);
    expect(saved).toContain(KEY);
  });

  it("an older file is replaced and made 0600 again", async () => {
    const path = join(home(), "credentials.txt");
    await presentCredentials({ lines: ["  producer key: pk_old.old"], isTty: false, path });
    chmodSync(path, 0o644);
    await presentCredentials({ lines, isTty: false, path });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, "utf8")).not.toContain("pk_old");
  });

  it("nothing to show: nothing printed, nothing written", async () => {
    const path = join(home(), "credentials.txt");
    expect(await presentCredentials({ lines: [], isTty: false, path })).toEqual([]);
    expect(() => statSync(path)).toThrow();
  });
});
