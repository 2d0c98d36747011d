import { createStatusLink, listStatusLinks, parseLinkDuration, revokeStatusLink } from "@porter/core";
import { listOption, required } from "../args";
import { defineCommand } from "../command";
import type { CliEnv } from "../env";
import { UsageError } from "../errors";
import { formatTable } from "../output";

/** The console's public origin: PORTER_PUBLIC_URL, else NEXTAUTH_URL (the console's own), else http://HOST:PORT. */
export const publicOrigin = (env: CliEnv): string =>
  (env.PORTER_PUBLIC_URL ?? env.NEXTAUTH_URL ?? `http://${env.HOST === "0.0.0.0" ? "127.0.0.1" : env.HOST}:${env.PORT}`).replace(/\/+$/, "");

/** `tenants link`: issues a tenant status link, printed once. */
export const tenantsLinkCommand = defineCommand({
  name: "tenants link",
  summary: "issue a tenant status link (printed once)",
  usage: "tenants link --tenant <id> [--expires 7d] [--job-types a,b] [--json]",
  description:
    "Issues a link to the tenant's status page (/status/<tenant>), optionally limited to job types,\n"
    + "expiring after --expires (s, m, h or d; 60s to 90d; default 7d). The token is printed once: only\n"
    + 'its hash is stored. The URL\'s origin is PORTER_PUBLIC_URL, else NEXTAUTH_URL, else http://HOST:PORT.\nWith --json prints {"id", "url", "token", "expires_at"}.',
  options: {
    tenant: { type: "string", arg: "<id>", help: "the tenant (required)" },
    expires: { type: "string", arg: "<duration>", help: "lifetime: 90m, 12h, 7d… (default 7d)" },
    "job-types": { type: "string", multiple: true, arg: "<types>", help: "job types the page shows, comma-separated (default: all)" },
  },
  run: async (ctx, { cmd, values }) => {
    const tenantId = required(cmd, "tenant", values.tenant);
    const seconds = values.expires === undefined ? undefined : parseLinkDuration(values.expires);
    if (seconds === null) throw new UsageError(`tenants link: --expires ${values.expires}: a duration such as 90m, 12h or 7d`);
    const jobTypes = listOption(values["job-types"]);
    const { prisma } = await ctx.db();
    const link = await createStatusLink(prisma, { tenantId, jobTypes, ...(seconds === undefined ? {} : { expiresInSeconds: seconds }), actor: ctx.actor });
    const url = `${publicOrigin(ctx.env)}/status/link/${link.token}`;
    ctx.out.progress(`issued status link ${link.id} for tenant ${tenantId}, expires ${link.expires_at}`);
    ctx.out.progress("send the URL now: it is not shown again");
    ctx.out.result({ id: link.id, url, token: link.token, expires_at: link.expires_at }, url);
  },
});

/** `tenants links`: a tenant's status links, without tokens. */
export const tenantsLinksCommand = defineCommand({
  name: "tenants links",
  summary: "list a tenant's status links",
  usage: "tenants links --tenant <id> [--json]",
  description: 'Lists the tenant\'s status links, newest first (no tokens: only hashes are stored). With --json\nprints {"links": [...]}.',
  options: { tenant: { type: "string", arg: "<id>", help: "the tenant (required)" } },
  run: async (ctx, { cmd, values }) => {
    const tenantId = required(cmd, "tenant", values.tenant);
    const { prisma } = await ctx.db();
    const links = await listStatusLinks(prisma, tenantId);
    const table = formatTable([
      ["id", "state", "job_types", "expires_at", "last_used_at", "created_by"],
      ...links.map((l) => [l.id, l.state, l.job_types.join(",") || "*", l.expires_at, l.last_used_at ?? "-", l.created_by]),
    ]);
    ctx.out.result({ links }, links.length ? table : `no status links for tenant ${tenantId}`);
  },
});

/** `tenants revoke-link`: revokes a status link; its page refuses the next request. */
export const tenantsRevokeLinkCommand = defineCommand({
  name: "tenants revoke-link",
  summary: "revoke a tenant status link by id",
  usage: "tenants revoke-link <id> [--json]",
  description: "Revokes a status link (sl_…): the link and the cookie it set stop working at once. Audited.",
  positionals: { exactlyOne: "link id" },
  run: async (ctx, { positionals: [id] }) => {
    const { prisma } = await ctx.db();
    await revokeStatusLink(prisma, { id, actor: ctx.actor });
    ctx.out.result({ id, revoked: true }, `revoked status link ${id}`);
  },
});
