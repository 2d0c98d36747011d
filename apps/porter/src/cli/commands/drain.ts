import { setTimeout as sleep } from "node:timers/promises";
import { AppError } from "@porter/contracts";
import { drainQueues, runningCounts } from "@porter/core";
import type { ControlDb } from "@porter/db/prisma";
import { intOption, listOption } from "../args";
import { defineCommand } from "../command";
import { CommandFailure, UsageError } from "../errors";

const POLL_MS = 500;
const QUIET_PROGRESS_MS = 10_000;

/** `drain`: pause queues and wait until none of their jobs is RUNNING. */
export const drainCommand = defineCommand({
  name: "drain",
  summary: "pause queue(s) and wait until none of their jobs is running",
  usage: "drain (--queue Q[,Q...] | --pool P) [--timeout-s N] [--reason R] [--json]",
  description:
    "Pauses the queue(s) (or every queue of the pool) so no new job starts, then waits, printing\n"
    + "progress, until none of their jobs is RUNNING; exits 0 and leaves them paused (resume them\n"
    + "with `npm run porter -- resume <queue>`). Ready jobs stay queued. Exits 1 on timeout, still paused.",
  options: {
    queue: { type: "string", multiple: true, arg: "<ids>", help: "queue(s) to drain; comma-separated or repeated" },
    pool: { type: "string", arg: "<id>", help: "drain every queue of this pool" },
    "timeout-s": { type: "string", arg: "<n>", help: "give up after this many seconds (default: wait indefinitely)" },
    reason: { type: "string", arg: "<text>", help: "recorded in the audit log (default: drain)" },
  },
  run: async (ctx, { cmd, values }) => {
    const requested = listOption(values.queue);
    if (requested.length > 0 && values.pool) throw new UsageError("drain: give --queue or --pool, not both");
    if (requested.length === 0 && !values.pool) throw new UsageError("drain: --queue <id> or --pool <id> is required (see drain --help)");
    const timeoutS = intOption(cmd, "timeout-s", values["timeout-s"], { min: 0, max: 7 * 86_400 });

    const { pool, prisma } = await ctx.db();
    const queues = values.pool ? await poolQueues(prisma, values.pool) : await existingQueues(prisma, requested);
    // The console's drain: one transaction, a `queue.pause` audit row per queue it paused.
    const changed = await drainQueues(prisma, { queueIds: queues, actor: ctx.actor, ...(values.reason ? { reason: values.reason } : {}) });
    for (const queueId of queues) ctx.out.progress(`drain: queue ${queueId} ${changed.includes(queueId) ? "paused" : "was already paused"}`);
    const resumeHint = `resume with: ${queues.map((q) => `npm run porter -- resume ${q}`).join("; ")}`;

    const started = Date.now();
    let last = "";
    let lastPrinted = 0;
    for (;;) {
      const counts = await runningCounts(pool, queues);
      const running = [...counts.values()].reduce((a, b) => a + b, 0);
      const waitedMs = Date.now() - started;
      if (running === 0) {
        ctx.out.progress(`drain: no job running in ${queues.join(", ")} after ${(waitedMs / 1000).toFixed(1)} s`);
        ctx.out.progress(resumeHint);
        ctx.out.result({ drained: true, queues, running: 0, waited_ms: waitedMs, paused: queues }, [
          `drained ${queues.join(", ")}: no job running; the queue(s) stay paused`,
          resumeHint,
        ]);
        return;
      }
      const detail = [...counts].map(([q, n]) => `${q} ${n}`).join(", ");
      if (detail !== last || Date.now() - lastPrinted >= QUIET_PROGRESS_MS) {
        ctx.out.progress(`drain: ${running} running (${detail}), waited ${Math.round(waitedMs / 1000)} s`);
        last = detail;
        lastPrinted = Date.now();
      }
      if (timeoutS !== undefined && waitedMs >= timeoutS * 1000) {
        throw new CommandFailure(
          `drain timed out after ${timeoutS} s with ${running} job(s) still running (${detail}); the queue(s) stay paused; ${resumeHint}`,
          "DRAIN_TIMEOUT",
          {
            queues,
            running: Object.fromEntries(counts),
          },
        );
      }
      await sleep(POLL_MS);
    }
  },
});

const poolQueues = async (prisma: ControlDb, poolId: string): Promise<string[]> => {
  if (!(await prisma.pool.findUnique({ where: { id: poolId }, select: { id: true } })))
    throw new AppError("NOT_FOUND", { message: `pool ${poolId} not found` });
  const rows = await prisma.queue.findMany({ where: { poolId }, select: { id: true }, orderBy: { id: "asc" } });
  if (rows.length === 0) throw new AppError("NOT_FOUND", { message: `pool ${poolId} has no queues` });
  return rows.map((r) => r.id);
};

const existingQueues = async (prisma: ControlDb, ids: string[]): Promise<string[]> => {
  const rows = await prisma.queue.findMany({ where: { id: { in: ids } }, select: { id: true } });
  const missing = ids.filter((id) => !rows.some((r) => r.id === id));
  if (missing.length) throw new AppError("NOT_FOUND", { message: `queue(s) not found: ${missing.join(", ")}` });
  return ids;
};
