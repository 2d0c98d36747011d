import { AppError } from "@porter/contracts";
import { readTenantUsage } from "@porter/core";
import {
  ZJobTypeCreate,
  ZJobTypeRow,
  ZJobTypeUpdate,
  ZResourceKeyCreate,
  ZResourceKeyRow,
  ZResourceKeyUpdate,
  ZTenantCreate,
  ZTenantRow,
  ZTenantUpdate,
} from "../schemas/control-plane";
import { ZTenantUsage, ZTenantUsageInput } from "../schemas/usage";
import { createTRPCRouter, mergeRouters, viewerReadProcedure } from "../trpc";
import { configRouter } from "./config";
import { statusLinksRouter } from "./status-links";

/** Job types: type → queue, payload schema version, timeout override. */
export const jobTypesRouter = configRouter("job_type", { row: ZJobTypeRow, create: ZJobTypeCreate, update: ZJobTypeUpdate });

/** Tenants: fair-share weight, running quota, admission rate and backlog caps, ceilings. */
export const tenantsRouter = mergeRouters(
  configRouter("tenant", { row: ZTenantRow, create: ZTenantCreate, update: ZTenantUpdate }),
  // tenants.links.*: the tenant's status links (issue 13); tenants.usage: its usage against the policy (issue 14).
  createTRPCRouter({
    links: statusLinksRouter,
    /** Per pool its actual share against its weight share, running vs quota, throttling, resource keys in use; NOT_FOUND for an unknown tenant. */
    usage: viewerReadProcedure
      .input(ZTenantUsageInput)
      .output(ZTenantUsage)
      .query(async ({ ctx, input }) => {
        const usage = await readTenantUsage(ctx.db, { tenantId: input.tenant_id, windowS: input.window_s });
        if (!usage) throw new AppError("NOT_FOUND", { message: `tenant ${input.tenant_id} not found` });
        return usage;
      }),
  }),
);

/** Resource keys: shared scarce resources with their concurrency and rate limits. */
export const resourceKeysRouter = configRouter("resource_key", { row: ZResourceKeyRow, create: ZResourceKeyCreate, update: ZResourceKeyUpdate });
