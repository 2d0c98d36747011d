import { listAlerts } from "@porter/core";
import { intOption } from "../args";
import { defineCommand } from "../command";
import { UsageError } from "../errors";
import { formatTable } from "../output";

const STATES = ["firing", "resolved"] as const;

/** `dlq alerts`: the DLQ alerts (firing and resolved), newest first, as the console's alerts list. */
export const dlqAlertsCommand = defineCommand({
  name: "dlq alerts",
  summary: "DLQ alerts, firing and resolved, newest first (the console's alerts list)",
  usage: "dlq alerts [--state firing|resolved] [--limit N] [--json]",
  description:
    "Lists the alerts of the DLQ alert rules (deaths per 5 minutes over N, unowned dead jobs older than\n"
    + "T, a failure group reopened), newest first, with how many fire now. The maintenance leader\n"
    + "evaluates the rules every 15 s; each firing and resolved transition is also delivered to the\n"
    + "alerts webhook, when one is configured. With --json: {alerts, firing, next_cursor}.",
  options: {
    state: { type: "string", arg: "<state>", help: "only firing or only resolved alerts" },
    limit: { type: "string", arg: "<n>", help: "alerts to list, 1 to 200 (default 50)" },
  },
  run: async (ctx, { cmd, values }) => {
    const state = values.state;
    if (state !== undefined && !(STATES as readonly string[]).includes(state)) {
      throw new UsageError(`${cmd}: --state must be firing or resolved, got "${state}"`);
    }
    const limit = intOption(cmd, "limit", values.limit, { min: 1, max: 200 }) ?? 50;
    const { prisma } = await ctx.db();
    const page = await listAlerts(prisma, { state: state as (typeof STATES)[number] | undefined, limit });
    const table = formatTable([
      ["id", "state", "kind", "queue", "subject", "value", "fired_at", "resolved_at", "message"],
      ...page.alerts.map((a) => [a.id, a.state, a.kind, a.queue_id ?? "*", a.subject, String(a.value), a.fired_at, a.resolved_at ?? "", a.message]),
    ]);
    ctx.out.result(page, page.alerts.length ? [...table, `${page.firing} alert(s) firing`] : [`no alerts; ${page.firing} firing`]);
  },
});
