import { readSignals, type Signals } from "@porter/core";
import { defineCommand } from "../command";
import { UsageError } from "../errors";
import { formatTable } from "../output";

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3_600, d: 86_400 };

/** `15m` → 900; s, m, h, d; 1 minute to 90 days. */
export const parseWindow = (cmd: string, text: string | undefined): number => {
  if (text === undefined) return 900;
  const match = /^(\d+)([smhd])$/.exec(text);
  const seconds = match ? Number(match[1]) * UNITS[match[2]!]! : Number.NaN;
  if (!(seconds >= 60 && seconds <= 90 * 86_400)) throw new UsageError(`${cmd}: --window must be like 15m, 6h or 7d (1 minute to 90 days), got "${text}"`);
  return seconds;
};

/** camelCase keys → snake_case, as the API's JSON (keys that are not camelCase words, such as error codes, stay). */
const snake = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(snake);
  if (value instanceof Date) return value.toISOString();
  if (value === null || typeof value !== "object") return typeof value === "number" && !Number.isFinite(value) ? null : value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [/^[a-z][a-zA-Z0-9]*$/.test(k) ? k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`) : k, snake(v)]),
  );
};

const num = (n: number | null, digits = 1): string => (n === null ? "-" : Number.isFinite(n) ? n.toFixed(digits) : "∞");
const ms = (n: number | null): string => (n === null ? "-" : n >= 10_000 ? `${(n / 1000).toFixed(0)}s` : `${n}ms`);

/** The readable form of {@link Signals}: queues at risk first, then growing ones. */
export const formatSignals = (s: Signals): string[] => {
  const queues = [...s.queues].sort(
    (a, b) => Number(b.isAtRisk) - Number(a.isAtRisk) || Number(b.isGrowing) - Number(a.isGrowing) || a.queueId.localeCompare(b.queueId),
  );
  return [
    `window ${s.windowS / 60} min ending ${s.at.toISOString()}`,
    ...formatTable([
      [
        "queue",
        "status",
        "ready",
        "running",
        "oldest_s",
        "backlog_s",
        "drain_s",
        "target_s",
        "in/s",
        "out/s",
        "wait p50/p95/p99",
        "run p50/p95/p99",
        "retry/s",
        "lease_exp/s",
        "dlq (unowned)",
      ],
      ...queues.map((q) => [
        q.queueId,
        q.isAtRisk ? "AT RISK" : q.isGrowing ? "growing" : q.paused ? "paused" : "ok",
        `${q.ready}${q.isReadyLowerBound ? "+" : ""}`,
        String(q.running),
        num(q.oldestClaimableAgeS),
        num(q.backlogS),
        q.isGrowing ? "growing" : num(q.drainS),
        q.targetWaitS === null ? "-" : String(q.targetWaitS),
        num(q.arrivalPerS, 2),
        num(q.completionPerS, 2),
        `${ms(q.waitMs.p50)}/${ms(q.waitMs.p95)}/${ms(q.waitMs.p99)}`,
        `${ms(q.runMs.p50)}/${ms(q.runMs.p95)}/${ms(q.runMs.p99)}`,
        num(q.retryPerS, 2),
        num(q.leaseExpiryPerS, 3),
        `${q.dlq.count} (${q.dlq.unowned})`,
      ]),
    ]),
    "",
    ...formatTable([
      ["pool", "live_workers", "desired_workers", "throttled_keys"],
      ...s.pools.map((p) => [p.poolId, String(p.liveWorkers), String(p.desiredWorkers), p.throttledKeys.join(",") || "-"]),
    ]),
  ];
};

/** `stats`: the derived signals (oldest age, backlog seconds, drain, percentiles, risk, desired workers). */
export const statsCommand = defineCommand({
  name: "stats",
  summary: "flow signals per queue: oldest age, backlog seconds, drain, wait/run percentiles, at risk, desired workers",
  usage: "stats [--queue Q] [--tenant T] [--window 15m] [--json]",
  description:
    "Prints the derived signals of each queue over the window (default 15 minutes) from the flow\n"
    + "rollups: arrival and completion rates, projected time to drain (or growing), backlog in seconds\n"
    + "of work, the oldest claimable age, wait and run percentiles, retries by code, lease expiries,\n"
    + "the DLQ; a queue whose projected wait exceeds its target_wait_s is AT RISK. Then per pool the\n"
    + "recommended worker count. --tenant narrows the flow (rates, percentiles) to one tenant. With\n"
    + '--json: {at, window_s, queues: [...], pools: [...]} (docs/observability.md "Signals").',
  options: {
    queue: { type: "string", arg: "<id>", help: "one queue" },
    tenant: { type: "string", arg: "<id>", help: "the flow of one tenant" },
    window: { type: "string", arg: "<15m|6h|7d>", help: "the window of rates and percentiles (default 15m)" },
  },
  run: async (ctx, { cmd, values }) => {
    const windowS = parseWindow(cmd, values.window);
    const { pool } = await ctx.db();
    const signals = await readSignals(pool, { windowS, queueId: values.queue, tenantId: values.tenant });
    if (values.queue && signals.queues.length === 0) throw new UsageError(`${cmd}: no queue "${values.queue}"`);
    ctx.out.result(snake(signals), formatSignals(signals));
  },
});
