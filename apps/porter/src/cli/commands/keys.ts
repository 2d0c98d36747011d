import { createApiKey, revokeApiKey } from "@porter/core";
import { listOption, required } from "../args";
import { defineCommand } from "../command";
import { UsageError } from "../errors";

/** `keys create`: a producer API key, printed once. */
export const keysCreateCommand = defineCommand({
  name: "keys create",
  summary: "create a producer API key (printed once)",
  usage: "keys create --tenant <id>[,<id>...] [--job-types a,b|*] [--name N] [--json]",
  description:
    "Creates a producer API key scoped to tenants and job types and prints it once: only a hash is\n"
    + 'stored. With --json prints {"key", "id", "tenants", "job_types"}.',
  options: {
    tenant: { type: "string", multiple: true, arg: "<ids>", help: "tenant(s) the key may enqueue for; comma-separated or repeated (required)" },
    "job-types": { type: "string", multiple: true, arg: "<types>", help: "job types the key may enqueue, comma-separated, or * for all (default *)" },
    name: { type: "string", arg: "<name>", help: "a label shown in the console" },
  },
  run: async (ctx, { cmd, values }) => {
    const tenantIds = listOption(values.tenant);
    if (tenantIds.length === 0) required(cmd, "tenant", undefined);
    const jobTypes = values["job-types"] === undefined ? ["*"] : listOption(values["job-types"]);
    if (jobTypes.length === 0) throw new UsageError("keys create: --job-types needs at least one job type, or *");
    if (jobTypes.includes("*") && jobTypes.length > 1) throw new UsageError("keys create: --job-types is either * or a list of job types, not both");
    const { prisma } = await ctx.db();
    const created = await createApiKey(prisma, { tenantIds, jobTypes, ...(values.name ? { name: values.name } : {}), actor: ctx.actor });
    ctx.out.progress(`created API key ${created.id} for tenants ${created.tenants.join(", ")}, job types ${created.job_types.join(", ")}`);
    ctx.out.progress("store it now: it is not shown again");
    ctx.out.result(created, created.key);
  },
});

/** `keys revoke`: revokes a key by id; later requests with it are refused (401). */
export const keysRevokeCommand = defineCommand({
  name: "keys revoke",
  summary: "revoke an API key by id",
  usage: "keys revoke <id> [--json]",
  description: "Revokes an API key (the id is the part after pk_ in the key). Audited.",
  positionals: { exactlyOne: "key id" },
  run: async (ctx, { positionals: [id] }) => {
    const { prisma } = await ctx.db();
    await revokeApiKey(prisma, { id, actor: ctx.actor });
    ctx.out.result({ id, revoked: true }, `revoked API key ${id}`);
  },
});
