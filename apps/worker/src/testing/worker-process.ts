// Spawns real worker processes for crash, drain and signal tests. By default `node --import tsx
// apps/worker/src/bin/worker.ts`, i.e. what `tsx` runs, but as ONE process — the `tsx` binary
// runs the script in a child process, so a SIGKILL of it would leave the worker running. `via`
// "npm" runs `npm run worker -- …` as an operator would, "bin" the `porter-worker` executable.
import { type ChildProcess, spawn } from "node:child_process";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";

const REPO_ROOT = fileURLToPath(new URL("../../../../", import.meta.url));
const WORKER_BIN = `${REPO_ROOT}apps/worker/src/bin/worker.ts`;
/** The `porter-worker` executable (apps/worker/package.json "bin"). */
export const PORTER_WORKER_BIN = `${REPO_ROOT}apps/worker/src/bin/porter-worker.mjs`;

/** How a worker process is started: the script under node, `npm run worker`, or the bin entry. */
export type WorkerLaunch = "node" | "npm" | "bin";

const commandOf = (via: WorkerLaunch, args: string[], script = WORKER_BIN): { file: string; args: string[]; cwd: string } => {
  if (via === "npm") return { file: "npm", args: ["run", "worker", "--", ...args], cwd: REPO_ROOT };
  // A supervisor runs the executable itself, from wherever it likes.
  if (via === "bin") return { file: PORTER_WORKER_BIN, args, cwd: tmpdir() };
  return { file: process.execPath, args: ["--import", "tsx", script, ...args], cwd: REPO_ROOT };
};

export type LogLine = { msg?: string; level?: number; [field: string]: unknown };

export type WorkerProcess = {
  child: ChildProcess;
  /** Resolves when the process exits. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
  /** Everything written so far (stdout and stderr). */
  output: () => string;
  /** Parsed pino lines so far. */
  logs: () => LogLine[];
  /** Waits for a log line matching `predicate`. */
  waitForLog: (predicate: (line: LogLine) => boolean, timeoutMs?: number) => Promise<LogLine>;
};

/**
 * Starts a worker for `pool` against `connectionString` (`via` how, default the script under
 * node), logging JSON to a buffer. `detached` puts it in a process group of its own (its pid).
 */
export const spawnWorker = (options: {
  connectionString: string;
  pool: string;
  args?: string[];
  env?: Record<string, string>;
  via?: WorkerLaunch;
  /** With `via` "node": the script node runs (default bin/worker.ts; `npm start`'s bundle of it, say). */
  script?: string;
  detached?: boolean;
}): WorkerProcess => {
  const command = commandOf(options.via ?? "node", ["--pool", options.pool, ...(options.args ?? [])], options.script);
  const child = spawn(command.file, command.args, {
    cwd: command.cwd,
    env: { ...process.env, DATABASE_URL: options.connectionString, LOG_LEVEL: "info", ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: options.detached ?? false,
  });
  let text = "";
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    text += chunk.toString("utf8");
    for (const listener of listeners) listener();
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    child.on("exit", (code, signal) => {
      resolve({ code, signal, at: Date.now() });
      for (const listener of listeners) listener();
    }),
  );
  const logs = (): LogLine[] =>
    text
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .flatMap((line) => {
        try {
          return [JSON.parse(line) as LogLine];
        } catch {
          return [];
        }
      });
  const waitForLog = (predicate: (line: LogLine) => boolean, timeoutMs = 20_000) =>
    new Promise<LogLine>((resolve, reject) => {
      const check = () => {
        const found = logs().find(predicate);
        if (found) {
          done();
          resolve(found);
        } else if (child.exitCode !== null || child.signalCode !== null) {
          done();
          reject(new Error(`worker exited before the expected log line; output:\n${text.slice(-4000)}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out waiting for a log line; output:\n${text.slice(-4000)}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      listeners.add(check);
      check();
    });
  return { child, exited, output: () => text, logs, waitForLog };
};

/** Stops a worker process if it is still running (SIGKILL), for `afterEach` cleanup. */
export const killWorker = async (worker: WorkerProcess | undefined): Promise<void> => {
  if (!worker || worker.child.exitCode !== null || worker.child.signalCode !== null) return;
  worker.child.kill("SIGKILL");
  await worker.exited;
};
