import { mkdir, mkdtemp, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { ensureAuthSecret } from "./auth-secret";
import { consoleBuildReason } from "./console-build";
import { forEachLine, renderLogLine } from "./prefix";

const dirs: string[] = [];
const tempRoot = async () => {
  const dir = await mkdtemp(join(tmpdir(), "porter-launcher-"));
  dirs.push(dir);
  return dir;
};
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});
const write = async (path: string, mtimeS: number) => {
  await mkdir(join(path, ".."), { recursive: true });
  await writeFile(path, "x");
  await utimes(path, mtimeS, mtimeS);
};

describe("consoleBuildReason", () => {
  it("asks for a build when there is none, or when a source it depends on is newer", async () => {
    const root = await tempRoot();
    await write(join(root, "apps/console/src/app/page.tsx"), 1_000);
    await write(join(root, "packages/core/src/index.ts"), 1_000);
    expect(await consoleBuildReason(root)).toBe("no build yet");
    await write(join(root, "apps/console/.next/BUILD_ID"), 2_000);
    expect(await consoleBuildReason(root)).toBeNull();

    // Tests, generated code, next-env.d.ts and the build's own files do not count.
    await write(join(root, "packages/core/src/claim.int.test.ts"), 3_000);
    await write(join(root, "packages/db/src/generated/prisma/client.ts"), 3_000);
    await write(join(root, "apps/console/next-env.d.ts"), 3_000);
    await write(join(root, "apps/console/.next/server/app.js"), 3_000);
    // Nor the server's bundle, which npm start rebuilds at every start (bundles.ts).
    await write(join(root, "apps/console/.porter-bundle/serve.mjs"), 3_000);
    expect(await consoleBuildReason(root)).toBeNull();

    await write(join(root, "packages/core/src/index.ts"), 3_000);
    expect(await consoleBuildReason(root)).toBe("sources changed since the last build");
    await write(join(root, "apps/console/.next/BUILD_ID"), 4_000);
    await write(join(root, "prisma/schema.prisma"), 5_000);
    expect(await consoleBuildReason(root)).toBe("sources changed since the last build");
  });
});

describe("ensureAuthSecret", () => {
  it("prefers the environment, else keeps one generated secret in the file", async () => {
    const path = join(await tempRoot(), ".porter/auth-secret");
    expect(await ensureAuthSecret("from-the-environment-1234", path)).toEqual({ secret: "from-the-environment-1234", source: "env" });
    const generated = await ensureAuthSecret(undefined, path);
    expect(generated.source).toBe("generated");
    expect(generated.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await ensureAuthSecret(undefined, path)).toEqual({ secret: generated.secret, source: "file" });
  });
});

describe("child output", () => {
  it("renders pino lines for humans and keeps other lines as they are", () => {
    expect(renderLogLine('{"level":30,"time":1,"pid":2,"hostname":"h","msg":"worker started","pool":"diag","n":3}')).toBe("INFO worker started pool=diag n=3");
    expect(renderLogLine("▲ Next.js 16")).toBe("▲ Next.js 16");
    expect(renderLogLine("{not json")).toBe("{not json");
  });

  it("splits a stream into lines across chunk boundaries, flushing the last partial line", async () => {
    const stream = new PassThrough();
    const lines: string[] = [];
    forEachLine(stream, (line) => lines.push(line));
    stream.write("one\ntw");
    stream.write(Buffer.from("o\r\nthr"));
    stream.end("ee");
    await new Promise((resolve) => stream.on("end", resolve));
    expect(lines).toEqual(["one", "two", "three"]);
  });
});

// The first dynamic import of the CLI's env module loads much of the CLI: seconds on a loaded machine
// (it passed the unit project's 5 s default in CI at load ~20).
describe("the console's interface (HOST)", () => {
  it("binds loopback unless HOST says otherwise — never Next's every-interface default; runs the console's own server", { timeout: 60_000 }, async () => {
    const { parseCliEnv } = await import("../cli/env");
    const { consoleStartArgs, localHostOf } = await import("./console-args");
    const env = (vars: Record<string, string>) => parseCliEnv(vars as NodeJS.ProcessEnv);
    const host = env({}).HOST;
    expect(host).toBe("127.0.0.1");
    expect(env({ HOST: "" }).HOST).toBe("127.0.0.1");
    // The console's server reads PORT and HOST from the environment the launcher gives it.
    expect(env({ HOST: "0.0.0.0" }).HOST).toBe("0.0.0.0");
    expect(consoleStartArgs({ server: "/srv/porter/apps/console/.porter-bundle/serve.mjs", guard: "file:///g.mjs" })).toEqual([
      "--import",
      "tsx",
      "--import",
      "file:///g.mjs",
      "/srv/porter/apps/console/.porter-bundle/serve.mjs",
    ]);
    expect(localHostOf("0.0.0.0")).toBe("127.0.0.1");
    expect(localHostOf("::1")).toBe("[::1]");
    expect(localHostOf("10.0.0.5")).toBe("10.0.0.5");
  });
});

describe("the workers' metrics endpoints (PORTER_WORKER_METRICS_PORT)", () => {
  it("passes --metrics-port to each pool's worker from 9464 up, another first port when set, none when 0 or off", { timeout: 60_000 }, async () => {
    const { parseCliEnv } = await import("../cli/env");
    const { workerMetricsPorts, workerStartArgs } = await import("./worker-args");
    const env = (vars: Record<string, string>) => parseCliEnv(vars as NodeJS.ProcessEnv);
    const first = (value?: string) => env(value === undefined ? {} : { PORTER_WORKER_METRICS_PORT: value }).PORTER_WORKER_METRICS_PORT;
    expect(first()).toBe(9464);
    expect(first("")).toBe(9464);
    expect(first("9500")).toBe(9500);
    expect(first("off")).toBe(0);
    expect(first("0")).toBe(0);
    expect(() => first("70000")).toThrow(/PORTER_WORKER_METRICS_PORT/);
    expect(() => first("nine")).toThrow(/PORTER_WORKER_METRICS_PORT/);
    // Never the console's default port.
    expect(first()).not.toBe(env({}).PORT);

    const ports = workerMetricsPorts(first(), ["default", "email"]);
    expect([...ports]).toEqual([
      ["default", 9464],
      ["email", 9465],
    ]);
    const args = (poolId: string, metricsPort?: number) => workerStartArgs({ preload: ["--import", "tsx"], workerScript: "worker.ts", poolId, metricsPort });
    expect(args("email", ports.get("email"))).toEqual(["--import", "tsx", "worker.ts", "--pool", "email", "--metrics-port", "9465"]);
    expect(workerMetricsPorts(first("off"), ["default"]).size).toBe(0);
    expect(args("default", workerMetricsPorts(first("off"), ["default"]).get("default"))).toEqual(["--import", "tsx", "worker.ts", "--pool", "default"]);
    expect(workerStartArgs({ preload: [], workerScript: "w.ts", poolId: "p", handlersModule: "/h.ts", metricsPort: 9464 })).toEqual([
      "w.ts",
      "--pool",
      "p",
      "--handlers",
      "/h.ts",
      "--skip-other-pools",
      "--metrics-port",
      "9464",
    ]);
    expect(() => workerMetricsPorts(65_535, ["a", "b"])).toThrow(/65535/);
  });
});
