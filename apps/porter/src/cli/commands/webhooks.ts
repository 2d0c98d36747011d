import {
  addAllowedNetwork,
  createTenantWebhook,
  deleteTenantWebhook,
  getTenantWebhook,
  listAllowedNetworks,
  listTenantWebhooks,
  listWebhookDeliveries,
  parseLinkDuration,
  removeAllowedNetwork,
  rotateTenantWebhookSecret,
} from "@porter/core";
import { listOption, required } from "../args";
import { defineCommand } from "../command";
import { UsageError } from "../errors";
import { formatTable } from "../output";

// `porter webhooks …`: tenant webhooks on terminal states (issue 13) and the SSRF guard's
// allow-list. Secrets are printed once (add, rotate).

/** `webhooks add`: a tenant endpoint; its secret is printed once. */
export const webhooksAddCommand = defineCommand({
  name: "webhooks add",
  summary: "add a tenant webhook endpoint (secret printed once)",
  usage: "webhooks add --tenant <id> --url <https url> --events succeeded,dead[,cancelled,expired] [--description <text>] [--json]",
  description:
    "Adds an https endpoint that receives a signed POST (Standard Webhooks) when one of the tenant's jobs\n"
    + "reaches a subscribed terminal state. The URL must not resolve to a loopback, private or link-local\n"
    + 'address unless an admin allowed its network (webhooks allow). With --json prints {"id", "secret"}.',
  options: {
    tenant: { type: "string", arg: "<id>", help: "the tenant (required)" },
    url: { type: "string", arg: "<url>", help: "the https:// URL (required)" },
    events: { type: "string", multiple: true, arg: "<events>", help: "succeeded, dead, cancelled, expired, comma-separated (required)" },
    description: { type: "string", arg: "<text>", help: "what the endpoint is for" },
  },
  run: async (ctx, { cmd, values }) => {
    const tenantId = required(cmd, "tenant", values.tenant);
    const url = required(cmd, "url", values.url);
    const events = listOption(values.events);
    if (events.length === 0) throw new UsageError("webhooks add: --events is required (succeeded, dead, cancelled, expired)");
    const { prisma } = await ctx.db();
    const e = await createTenantWebhook(prisma, { tenantId, url, events, description: values.description ?? null, actor: ctx.actor });
    ctx.out.progress(`added webhook endpoint ${e.id} for tenant ${tenantId} (${e.events.join(", ")})`);
    ctx.out.progress("store the secret now: it is not shown again");
    ctx.out.result({ id: e.id, secret: e.secret }, e.secret);
  },
});

/** `webhooks list`: a tenant's endpoints, without secrets. */
export const webhooksListCommand = defineCommand({
  name: "webhooks list",
  summary: "list a tenant's webhook endpoints",
  usage: "webhooks list --tenant <id> [--json]",
  description: 'Lists the tenant\'s endpoints (no secrets, only their last 4 characters). With --json prints {"webhooks": [...]}.',
  options: { tenant: { type: "string", arg: "<id>", help: "the tenant (required)" } },
  run: async (ctx, { cmd, values }) => {
    const tenantId = required(cmd, "tenant", values.tenant);
    const { prisma } = await ctx.db();
    const webhooks = await listTenantWebhooks(prisma, tenantId);
    const table = formatTable([
      ["id", "enabled", "events", "url", "secret", "description"],
      ...webhooks.map((w) => [w.id, w.enabled ? "yes" : "no", w.events.join(","), w.url, w.secret_hint, w.description ?? ""]),
    ]);
    ctx.out.result({ webhooks }, webhooks.length ? table : `no webhook endpoints for tenant ${tenantId}`);
  },
});

/** `webhooks rotate`: a new secret (printed once); the old one keeps signing for the overlap. */
export const webhooksRotateCommand = defineCommand({
  name: "webhooks rotate",
  summary: "rotate an endpoint's secret (new secret printed once)",
  usage: "webhooks rotate <id> [--overlap 24h] [--json]",
  description:
    "Gives the endpoint a new secret. During --overlap (s, m, h or d; 0 to 7d; default 24h) deliveries\n"
    + "carry two signatures, so the receiver may switch to the new secret at any time within it.\n"
    + 'With --json prints {"id", "secret", "previous_secret_expires_at"}.',
  positionals: { exactlyOne: "endpoint id" },
  options: { overlap: { type: "string", arg: "<duration>", help: "how long the old secret also signs (default 24h)" } },
  run: async (ctx, { values, positionals: [id] }) => {
    const overlap = values.overlap === undefined ? undefined : parseLinkDuration(values.overlap);
    if (overlap === null) throw new UsageError(`webhooks rotate: --overlap ${values.overlap}: a duration such as 0, 90m, 24h or 7d`);
    const { prisma } = await ctx.db();
    const r = await rotateTenantWebhookSecret(prisma, { id, ...(overlap === undefined ? {} : { overlapSeconds: overlap }), actor: ctx.actor });
    ctx.out.progress(
      r.previous_secret_expires_at ? `rotated; the old secret signs too until ${r.previous_secret_expires_at}` : "rotated; the old secret no longer signs",
    );
    ctx.out.progress("store the secret now: it is not shown again");
    ctx.out.result(r, r.secret);
  },
});

/** `webhooks remove`: deletes an endpoint. */
export const webhooksRemoveCommand = defineCommand({
  name: "webhooks remove",
  summary: "delete a tenant webhook endpoint",
  usage: "webhooks remove <id> [--json]",
  description: "Deletes the endpoint (we_…): nothing more is queued for it; deliveries in flight fail permanently. Audited.",
  positionals: { exactlyOne: "endpoint id" },
  run: async (ctx, { positionals: [id] }) => {
    const { prisma } = await ctx.db();
    await deleteTenantWebhook(prisma, { id, actor: ctx.actor });
    ctx.out.result({ id, deleted: true }, `deleted webhook endpoint ${id}`);
  },
});

/** `webhooks deliveries`: an endpoint's delivery log. */
export const webhooksDeliveriesCommand = defineCommand({
  name: "webhooks deliveries",
  summary: "an endpoint's delivery attempts, newest first",
  usage: "webhooks deliveries <id> [--limit 50] [--cursor <c>] [--json]",
  description:
    'One row per attempt (kept 14 days): time, event, subject job, attempt, status, duration, error.\nWith --json prints {"items": [...], "next_cursor"}.',
  positionals: { exactlyOne: "endpoint id" },
  options: {
    limit: { type: "string", arg: "<n>", help: "rows per page, 1 to 200 (default 50)" },
    cursor: { type: "string", arg: "<cursor>", help: "next_cursor of the previous page" },
  },
  run: async (ctx, { values, positionals: [id] }) => {
    const limit = values.limit === undefined ? 50 : Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw new UsageError("webhooks deliveries: --limit is 1 to 200");
    const { prisma } = await ctx.db();
    await getTenantWebhook(prisma, id);
    const page = await listWebhookDeliveries(prisma, { endpointId: id, limit, cursor: values.cursor ?? null });
    const table = formatTable([
      ["at", "event", "job", "attempt", "status", "ms", "error"],
      ...page.items.map((d) => [
        d.at,
        d.event_type,
        d.subject_job_id ?? "-",
        String(d.attempt),
        d.status_code === null ? "-" : String(d.status_code),
        String(d.duration_ms),
        d.error ?? "",
      ]),
    ]);
    ctx.out.result(page, page.items.length ? `${table}${page.next_cursor ? `\nmore: --cursor ${page.next_cursor}` : ""}` : `no deliveries for ${id}`);
  },
});

/** `webhooks allow`: allow-lists a network for the SSRF guard. */
export const webhooksAllowCommand = defineCommand({
  name: "webhooks allow",
  summary: "allow webhooks into a private network (admin)",
  usage: "webhooks allow <cidr> [--note <text>] [--json]",
  description:
    "Lets webhook URLs resolve into <cidr> (10.1.0.0/16, 127.0.0.1/32, ::1/128) although it is loopback,\nprivate or link-local. Applies to every tenant's and the alerts endpoint. Audited.",
  positionals: { exactlyOne: "cidr" },
  options: { note: { type: "string", arg: "<text>", help: "why (shown in the list)" } },
  run: async (ctx, { values, positionals: [cidr] }) => {
    const { prisma } = await ctx.db();
    const n = await addAllowedNetwork(prisma, { cidr, ...(values.note ? { note: values.note } : {}), actor: ctx.actor });
    ctx.out.result(n, `allowed ${n.cidr}`);
  },
});

/** `webhooks disallow`: removes a network from the allow-list. */
export const webhooksDisallowCommand = defineCommand({
  name: "webhooks disallow",
  summary: "remove a network from the webhook allow-list (admin)",
  usage: "webhooks disallow <cidr> [--json]",
  description: "Removes <cidr> from the allow-list: deliveries into it are refused from their next attempt on. Audited.",
  positionals: { exactlyOne: "cidr" },
  run: async (ctx, { positionals: [cidr] }) => {
    const { prisma } = await ctx.db();
    const r = await removeAllowedNetwork(prisma, { cidr, actor: ctx.actor });
    ctx.out.result(r, `removed ${r.cidr}`);
  },
});

/** `webhooks allowed`: the allow-list. */
export const webhooksAllowedCommand = defineCommand({
  name: "webhooks allowed",
  summary: "list the webhook allow-list",
  usage: "webhooks allowed [--json]",
  description: 'Lists the networks webhooks may reach although private. With --json prints {"networks": [...]}.',
  run: async (ctx) => {
    const { prisma } = await ctx.db();
    const networks = await listAllowedNetworks(prisma);
    const table = formatTable([["cidr", "note", "created_by", "created_at"], ...networks.map((n) => [n.cidr, n.note, n.created_by, n.created_at])]);
    ctx.out.result({ networks }, networks.length ? table : "no networks allowed (webhooks reach public addresses only)");
  },
});

export const WEBHOOK_COMMANDS = [
  webhooksAddCommand,
  webhooksListCommand,
  webhooksRotateCommand,
  webhooksRemoveCommand,
  webhooksDeliveriesCommand,
  webhooksAllowCommand,
  webhooksDisallowCommand,
  webhooksAllowedCommand,
];
