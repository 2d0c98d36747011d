import { JOB_STATES } from "@porter/contracts";
import { listWorkers, queueOverview } from "@porter/core";
import { defineCommand } from "../command";
import { formatTable } from "../output";

/** `queues`: every queue's state and job counts, the console's overview. */
export const queuesCommand = defineCommand({
  name: "queues",
  summary: "every queue: paused or active, running vs cap, jobs per state",
  usage: "queues [--pool P] [--json]",
  description:
    "Lists every queue as the console's overview does: its pool, whether it is paused, jobs RUNNING\n"
    + "against its concurrency cap, its jobs per state, the age of the oldest claimable job, and how\n"
    + "many finished in the last 5 minutes.",
  options: { pool: { type: "string", arg: "<id>", help: "only the queues of this pool" } },
  run: async (ctx, { values }) => {
    const { pool } = await ctx.db();
    const queues = (await queueOverview(pool)).filter((q) => values.pool === undefined || q.pool_id === values.pool);
    const table = formatTable([
      ["queue", "pool", "state", "running", ...JOB_STATES, "oldest_ready", "done_5m"],
      ...queues.map((q) => [
        q.queue_id,
        q.pool_id,
        q.paused ? "paused" : "active",
        `${q.running}/${q.concurrency_cap ?? "-"}`,
        ...JOB_STATES.map((s) => String(q.counts[s])),
        q.oldest_ready_age_s === null ? "" : `${q.oldest_ready_age_s}s`,
        String(q.finished_last_5m),
      ]),
    ]);
    ctx.out.result({ queues }, queues.length ? table : "no queues");
  },
});

/** `workers`: worker processes, live first, the console's pools page. */
export const workersCommand = defineCommand({
  name: "workers",
  summary: "worker processes: live or lost (and stopped with --all), pool, host, heartbeat, slots",
  usage: "workers [--pool P] [--all] [--json]",
  description:
    "Lists worker processes as the console's pools page does, live first: status (live: heartbeating;\n"
    + "lost: stopped heartbeating without a clean stop, its jobs are rescued; stopped: exited cleanly),\n"
    + "pool, host and pid, seconds since the last heartbeat, and running jobs against its slots.",
  options: {
    pool: { type: "string", arg: "<id>", help: "only the workers of this pool" },
    all: { type: "boolean", help: "also workers that stopped" },
  },
  run: async (ctx, { values }) => {
    const { pool } = await ctx.db();
    const workers = await listWorkers(pool, { ...(values.pool ? { poolId: values.pool } : {}), includeStopped: values.all ?? false });
    const table = formatTable([
      ["worker", "status", "pool", "host", "pid", "heartbeat", "running", "version"],
      ...workers.map((w) => [
        w.id,
        w.status + (w.draining && w.status === "live" ? " (draining)" : ""),
        w.pool_id,
        w.host,
        String(w.pid),
        `${w.heartbeat_age_s}s ago`,
        `${w.running}/${w.concurrency}`,
        w.version,
      ]),
    ]);
    ctx.out.result({ workers }, workers.length ? table : values.all ? "no workers" : "no workers (stopped ones with --all)");
  },
});
