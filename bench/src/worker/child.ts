// The worker process of one variant: started by the bench (spawn.ts) with its config as argv[2]
// and its parent's clock anchor as argv[3] (protocol.ts: its stamps are on the parent's clock),
// driven over IPC. Every system runs in a process of its own, the same way, so the producer and
// the measuring code never share an event loop with the worker under test.
import { variantById } from "../variants";
import { ClaimTimer } from "./claim-timer";
import { JobLog } from "./job-log";
import { type FromWorker, nowMs, type ToWorker, useClockAnchor, type WorkerConfig } from "./protocol";
import type { RunningWorker } from "./runner";
import { flushTrace, installTrace } from "./trace";

const config = JSON.parse(process.argv[2] ?? "{}") as WorkerConfig;
if (process.argv[3] !== undefined) useClockAnchor(Number(process.argv[3]));
const send = (message: FromWorker) => process.send?.(message);
const system = variantById(config.variant).system;

const loadSystem = async () => {
  switch (system) {
    case "porter": {
      const m = await import("./run-porter");
      return { start: m.startPorter, isClaim: m.isPorterClaim };
    }
    case "graphile": {
      const m = await import("./run-graphile");
      return { start: m.startGraphile, isClaim: m.isGraphileClaim };
    }
    case "pgboss": {
      const m = await import("./run-pgboss");
      return { start: m.startPgBoss, isClaim: m.isPgBossClaim };
    }
  }
};

// The idle probe (bench/src/probe/idle-probe.ts) traces every statement and notification of the worker.
const tracePath = process.env.BENCH_TRACE;
if (tracePath) installTrace();
const { start, isClaim } = await loadSystem();
const log = new JobLog(config.handler);
const claims = new ClaimTimer(isClaim);
claims.install();
let worker: RunningWorker | undefined;
let ticker: NodeJS.Timeout | undefined;
let cpuAtStart: NodeJS.CpuUsage | undefined;

const fail = (error: unknown) => {
  send({ type: "error", message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  setTimeout(() => process.exit(1), 100);
};

process.on("message", (message: ToWorker) => {
  void (async () => {
    switch (message.type) {
      case "start": {
        const at = nowMs();
        cpuAtStart = process.cpuUsage();
        worker = await start(config, message.url, log);
        ticker = setInterval(() => send({ type: "progress", progress: log.progress() }), 200);
        send({ type: "started", at, info: worker.info });
        return;
      }
      case "latency":
        send({ type: "latency", id: message.id, latency: log.latency(message.from, message.to) });
        return;
      case "claims":
        send({ type: "claims", id: message.id, claims: claims.stats(message.skip) });
        return;
      case "stop": {
        clearInterval(ticker);
        await worker?.stop();
        if (tracePath) flushTrace(tracePath);
        const cpu = process.cpuUsage(cpuAtStart);
        send({
          type: "stopped",
          summary: {
            ...log.progress(),
            claims: claims.stats(0),
            repeatedSuccesses: log.repeatedSuccesses(),
            distinctSucceeded: log.distinctSucceeded(),
            cpuMs: (cpu.user + cpu.system) / 1000,
            info: worker?.info ?? {},
          },
        });
        setTimeout(() => process.exit(0), 50);
        return;
      }
    }
  })().catch(fail);
});
process.on("disconnect", () => process.exit(0));
process.on("unhandledRejection", fail);
send({ type: "booted" });
