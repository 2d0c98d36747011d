// Worker processes on the test hosts: `porter-worker` (the bin entry) started inside a host's
// network namespace with `ip netns exec`, so its every connection crosses the bridge. Their JSON
// log lines are kept (refused late results, lost leases), their metrics endpoints scraped over the
// bridge.
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { Host } from "./netns";

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const PORTER_WORKER = `${REPO_ROOT}apps/worker/src/bin/porter-worker.mjs`;
const HANDLERS = fileURLToPath(new URL("./handlers.ts", import.meta.url));
const METRICS_PORT = 9464;

export type Connection = {
  /** The pool's connection string (direct, or PgBouncer). */
  poolUrl: string;
  /** The LISTEN and maintenance connections' own (direct) connection string, when the pool's is PgBouncer. */
  listenUrl?: string;
  /** Named prepared statements off (a transaction-mode pooler). */
  isPooled: boolean;
};

export type WorkerProc = {
  host: Host;
  child: ChildProcess;
  metricsUrl: string;
  workerId: string | undefined;
  lines: Array<{ msg?: string; [k: string]: unknown }>;
  exit: { code: number | null; signal: string | null } | undefined;
  ready: Promise<void>;
};

/** Starts `perHost` worker processes for pool `background` on each host and waits until each logged "worker started". */
export const startFleet = async (
  hosts: Host[],
  options: { perHost: number; concurrency: number; poolSize: number; connection: Connection; timeoutMs: number },
): Promise<WorkerProc[]> => {
  const procs: WorkerProc[] = [];
  for (const host of hosts) {
    for (let j = 0; j < options.perHost; j++) {
      const port = METRICS_PORT + j;
      const args = [
        "netns",
        "exec",
        host.ns,
        process.execPath,
        PORTER_WORKER,
        "--pool",
        "background",
        "--concurrency",
        String(options.concurrency),
        "--db-pool-size",
        String(options.poolSize),
        "--handlers",
        HANDLERS,
        "--grace-ms",
        "3000",
        "--metrics-port",
        String(port),
        "--metrics-host",
        host.address,
      ];
      const env: NodeJS.ProcessEnv = { ...process.env, PORTER_APP_DATABASE_URL: options.connection.poolUrl, LOG_LEVEL: "info" };
      delete env.DATABASE_URL;
      if (options.connection.listenUrl) env.PORTER_LISTEN_DATABASE_URL = options.connection.listenUrl;
      if (options.connection.isPooled) env.PORTER_PREPARED_STATEMENTS = "off";
      const child = spawn("ip", args, { cwd: REPO_ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
      const proc: WorkerProc = {
        host,
        child,
        metricsUrl: `http://${host.address}:${port}/metrics`,
        workerId: undefined,
        lines: [],
        exit: undefined,
        ready: Promise.resolve(),
      };
      proc.ready = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`a worker on ${host.ns} did not start within ${options.timeoutMs} ms`)), options.timeoutMs);
        let buffer = "";
        child.stdout!.on("data", (chunk: Buffer) => {
          buffer += chunk.toString("utf8");
          let nl = buffer.indexOf("\n");
          while (nl >= 0) {
            const line = buffer.slice(0, nl);
            buffer = buffer.slice(nl + 1);
            nl = buffer.indexOf("\n");
            try {
              const parsed = JSON.parse(line) as WorkerProc["lines"][number];
              proc.lines.push(parsed);
              if (parsed.msg === "worker started") {
                proc.workerId = parsed.workerId as string;
                clearTimeout(timer);
                resolve();
              }
            } catch {
              // not a log line
            }
          }
        });
        let stderr = "";
        child.stderr!.on("data", (chunk: Buffer) => {
          stderr += chunk.toString("utf8");
        });
        child.on("exit", (code, signal) => {
          proc.exit = { code, signal };
          clearTimeout(timer);
          reject(new Error(`a worker on ${host.ns} exited (${code ?? signal}) before it started: ${stderr.slice(-500)}`));
        });
      });
      proc.ready.catch(() => undefined);
      procs.push(proc);
    }
  }
  await Promise.all(procs.map((p) => p.ready));
  return procs;
};

/** SIGTERM (drain) every live worker and waits for their exits; SIGKILL after `timeoutMs`. */
export const stopFleet = async (procs: WorkerProc[], timeoutMs = 15_000): Promise<void> => {
  await Promise.all(
    procs.map(
      (p) =>
        new Promise<void>((resolve) => {
          if (p.child.exitCode !== null || p.child.signalCode !== null) return resolve();
          const timer = setTimeout(() => p.child.kill("SIGKILL"), timeoutMs);
          p.child.once("exit", () => {
            clearTimeout(timer);
            resolve();
          });
          p.child.kill("SIGTERM");
        }),
    ),
  );
};

/** Cumulative claim-latency histogram buckets (le → count) of one worker, or undefined when it does not answer. */
export const scrapeClaimBuckets = async (proc: WorkerProc): Promise<Map<number, number> | undefined> => {
  try {
    const response = await fetch(proc.metricsUrl, { signal: AbortSignal.timeout(3_000) });
    const text = await response.text();
    const buckets = new Map<number, number>();
    for (const line of text.split("\n")) {
      const m = /^porter_worker_claim_seconds_bucket\{.*le="([^"]+)".*\} (\S+)$/.exec(line);
      if (m) buckets.set(m[1] === "+Inf" ? Number.POSITIVE_INFINITY : Number(m[1]), Number(m[2]));
    }
    return buckets;
  } catch {
    return undefined;
  }
};

/** p-quantile (seconds) of merged cumulative buckets (after − before), interpolated within the bucket. */
export const quantileOfBuckets = (before: Array<Map<number, number> | undefined>, after: Array<Map<number, number> | undefined>, q: number): number => {
  const merged = new Map<number, number>();
  after.forEach((a, i) => {
    if (!a) return;
    for (const [le, n] of a) merged.set(le, (merged.get(le) ?? 0) + n - (before[i]?.get(le) ?? 0));
  });
  const bounds = [...merged.keys()].sort((x, y) => x - y);
  const total = merged.get(Number.POSITIVE_INFINITY) ?? 0;
  if (total === 0) return Number.NaN;
  const target = q * total;
  let previousLe = 0;
  let previousCount = 0;
  for (const le of bounds) {
    const count = merged.get(le)!;
    if (count >= target) {
      if (!Number.isFinite(le)) return previousLe;
      return previousLe + ((le - previousLe) * (target - previousCount)) / Math.max(1, count - previousCount);
    }
    previousLe = le;
    previousCount = count;
  }
  return previousLe;
};
