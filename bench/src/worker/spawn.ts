import { fork } from "node:child_process";
import { workerEntry } from "./bundle";
import {
  type ClaimStats,
  clockAnchor,
  type Distribution,
  type FromWorker,
  type Progress,
  type ToWorker,
  type WorkerConfig,
  type WorkerSummary,
} from "./protocol";

/** The parent's handle on one worker process. */
export type WorkerHandle = {
  /** Starts the system's worker on the database at `url`; `at` is when the child began starting it. */
  start: (url: string) => Promise<{ at: number; info: Record<string, unknown> }>;
  /** The latest progress the worker reported (every 200 ms). */
  progress: () => Progress;
  /** Resolves true once `done(progress)` holds, false after `timeoutMs`. */
  waitFor: (done: (p: Progress) => boolean, timeoutMs: number) => Promise<boolean>;
  /** enqueue→start of the jobs enqueued in [from, to). */
  latency: (from: number, to: number) => Promise<Distribution>;
  /** Claim timings so far, without the first `skip` claims. */
  claims: (skip: number) => Promise<ClaimStats>;
  /** Stops the worker as its library recommends (drain/graceful stop) and ends the process. */
  stop: () => Promise<WorkerSummary>;
  kill: () => void;
};

/**
 * Forks a worker process for `config` and resolves once it has loaded its system. The process runs
 * the bench's worker bundle (bundle.ts), or child.ts through tsx with BENCH_WORKER=tsx.
 */
export const spawnWorker = async (config: WorkerConfig): Promise<WorkerHandle> => {
  const entry = await workerEntry();
  return new Promise((resolveBoot, rejectBoot) => {
    // argv[3]: the parent's clock anchor, so that the child's stamps are on the parent's clock (protocol.ts).
    const child = fork(entry.path, [JSON.stringify(config), String(clockAnchor())], {
      execArgv: entry.execArgv,
      // graphile-worker reads NO_LOG_SUCCESS when loaded; it logs every completed job otherwise.
      env: { ...process.env, NO_LOG_SUCCESS: "1" },
      // The child's stdout goes to our stderr: stdout carries only the report.
      stdio: ["ignore", 2, 2, "ipc"],
    });
    let latest: Progress = { executed: 0, succeeded: 0, failed: 0, firstStartAt: 0, lastEndAt: 0 };
    let nextId = 1;
    let failure: Error | undefined;
    const waiters = new Map<string, { resolve: (m: FromWorker) => void; reject: (e: Error) => void }>();
    const progressWaiters = new Set<() => void>();
    const expect = (key: string, message: ToWorker) =>
      new Promise<FromWorker>((resolve, reject) => {
        if (failure) return reject(failure);
        waiters.set(key, { resolve, reject });
        child.send(message);
      });
    const failAll = (error: Error) => {
      failure = error;
      for (const w of waiters.values()) w.reject(error);
      waiters.clear();
      rejectBoot(error);
    };
    child.on("message", (m: FromWorker) => {
      switch (m.type) {
        case "booted":
          resolveBoot(handle);
          return;
        case "progress":
          latest = m.progress;
          for (const w of progressWaiters) w();
          return;
        case "error":
          failAll(new Error(`${config.variant} worker failed: ${m.message}`));
          return;
        default: {
          const key = "id" in m ? `${m.type}:${m.id}` : m.type;
          waiters.get(key)?.resolve(m);
          waiters.delete(key);
        }
      }
    });
    child.on("exit", (code) => {
      if (waiters.size > 0 || code !== 0) failAll(new Error(`${config.variant} worker exited with code ${code}`));
    });
    const handle: WorkerHandle = {
      start: async (url) => {
        const m = await expect("started", { type: "start", url });
        if (m.type !== "started") throw new Error("unexpected reply");
        return { at: m.at, info: m.info };
      },
      progress: () => latest,
      waitFor: (done, timeoutMs) =>
        new Promise((resolve) => {
          if (done(latest)) return resolve(true);
          const check = () => {
            if (!done(latest) && !failure) return;
            progressWaiters.delete(check);
            clearTimeout(timer);
            resolve(!failure);
          };
          const timer = setTimeout(() => {
            progressWaiters.delete(check);
            resolve(false);
          }, timeoutMs);
          progressWaiters.add(check);
        }),
      latency: async (from, to) => {
        const id = nextId++;
        const m = await expect(`latency:${id}`, { type: "latency", id, from, to });
        if (m.type !== "latency") throw new Error("unexpected reply");
        return m.latency;
      },
      claims: async (skip) => {
        const id = nextId++;
        const m = await expect(`claims:${id}`, { type: "claims", id, skip });
        if (m.type !== "claims") throw new Error("unexpected reply");
        return m.claims;
      },
      stop: async () => {
        const m = await expect("stopped", { type: "stop" });
        if (m.type !== "stopped") throw new Error("unexpected reply");
        return m.summary;
      },
      kill: () => {
        if (child.exitCode === null) child.kill("SIGKILL");
      },
    };
  });
};
