// Real Prometheus tooling for the scrape tests (Debian's `prometheus` package: promtool and the
// server). Missing tools fail the test with the command that installs them; .ci/run installs them
// when missing. Integration tests only.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The command that installs promtool and prometheus here (Debian). */
export const PROMETHEUS_INSTALL = "apt-get update && apt-get install -y prometheus";

/** The path of a Prometheus tool (`promtool`, `prometheus`); throws with the install command when it is missing. */
export const prometheusTool = (name: "promtool" | "prometheus"): string => {
  const path = [`/usr/bin/${name}`, `/usr/local/bin/${name}`].find((p) => existsSync(p));
  if (!path) throw new Error(`${name} is not installed; install Debian's prometheus package: ${PROMETHEUS_INSTALL}`);
  return path;
};

/**
 * promtool's lint of prom-client's own default metrics: Node's active handles/requests/resources
 * are gauges named `…_total` upstream (prom-client 15), which promtool flags. Nothing of ours.
 */
const UPSTREAM_LINT = /^porter_\w+?_nodejs_active_(handles|requests|resources)_total non-counter metrics should not have "_total" suffix$/;

/**
 * `promtool check metrics` on an exposition text: its exit status (0 clean, 3 lint problems, 1 a
 * text that does not parse) and its problems, one a line, without {@link UPSTREAM_LINT}'s.
 */
export const checkMetrics = (text: string): { status: number | null; problems: string[] } => {
  const run = spawnSync(prometheusTool("promtool"), ["check", "metrics"], { input: text, encoding: "utf8", timeout: 20_000 });
  const lines = `${run.stdout ?? ""}${run.stderr ?? ""}`.split("\n").map((l) => l.trim());
  return { status: run.status, problems: lines.filter((l) => l !== "" && !UPSTREAM_LINT.test(l)) };
};

/** A free TCP port on 127.0.0.1 (bound and released). */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

/** A Prometheus server of a test: its API's base URL, and `stop()` (kills it, removes its data). */
export type PrometheusServer = { url: string; child: ChildProcess; output: () => string; stop: () => Promise<void> };

/**
 * Starts a Prometheus server on 127.0.0.1 (a free port, a temporary config and TSDB) scraping
 * `target` (host:port) at `metricsPath` every second, with an optional bearer token.
 */
export const startPrometheus = async (options: { target: string; metricsPath: string; bearerToken?: string }): Promise<PrometheusServer> => {
  const binary = prometheusTool("prometheus");
  const dir = mkdtempSync(join(tmpdir(), "porter-prometheus-"));
  const port = await freePort();
  const auth = options.bearerToken ? `\n    authorization:\n      credentials: ${JSON.stringify(options.bearerToken)}` : "";
  writeFileSync(
    join(dir, "prometheus.yml"),
    `global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: porter\n    metrics_path: ${JSON.stringify(options.metricsPath)}${auth}\n    static_configs:\n      - targets: [${JSON.stringify(options.target)}]\n`,
  );
  const child = spawn(
    binary,
    [`--config.file=${join(dir, "prometheus.yml")}`, `--storage.tsdb.path=${join(dir, "data")}`, `--web.listen-address=127.0.0.1:${port}`, "--log.level=warn"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let text = "";
  child.stdout?.on("data", (c: Buffer) => (text += c.toString("utf8")));
  child.stderr?.on("data", (c: Buffer) => (text += c.toString("utf8")));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  return { url: `http://127.0.0.1:${port}`, child, output: () => text, stop };
};

/**
 * Queries the server's HTTP API (`/api/v1/query`) until `accept` takes a result vector, or
 * `timeoutMs` passes (then throws with the last answer and the server's output).
 */
export const queryUntil = async (
  server: PrometheusServer,
  query: string,
  accept: (result: Array<{ metric: Record<string, string>; value: [number, string] }>) => boolean,
  timeoutMs = 30_000,
): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>> => {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    if (server.child.exitCode !== null) throw new Error(`prometheus exited (${server.child.exitCode}):\n${server.output().slice(-3000)}`);
    try {
      const response = await fetch(`${server.url}/api/v1/query?query=${encodeURIComponent(query)}`);
      last = await response.text();
      const body = JSON.parse(last) as { status: string; data?: { result: Array<{ metric: Record<string, string>; value: [number, string] }> } };
      if (body.status === "success" && body.data && accept(body.data.result)) return body.data.result;
    } catch (error) {
      last = (error as Error).message;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`no accepted answer to ${query} within ${timeoutMs} ms; last: ${last}\nprometheus:\n${server.output().slice(-3000)}`);
};
