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
import { createTRPCRouter, mergeRouters } from "../trpc";
import { configRouter } from "./config";
import { statusLinksRouter } from "./status-links";

/** Job types: type → queue, payload schema version, timeout override. */
export const jobTypesRouter = configRouter("job_type", { row: ZJobTypeRow, create: ZJobTypeCreate, update: ZJobTypeUpdate });

/** Tenants: fair-share weight, running quota, admission rate and backlog caps, ceilings. */
export const tenantsRouter = mergeRouters(
  configRouter("tenant", { row: ZTenantRow, create: ZTenantCreate, update: ZTenantUpdate }),
  // tenants.links.*: the tenant's status links (issue 13).
  createTRPCRouter({ links: statusLinksRouter }),
);

/** Resource keys: shared scarce resources with their concurrency and rate limits. */
export const resourceKeysRouter = configRouter("resource_key", { row: ZResourceKeyRow, create: ZResourceKeyCreate, update: ZResourceKeyUpdate });
