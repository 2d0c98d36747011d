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
import { configRouter } from "./config";

/** Job types: type → queue, payload schema version, timeout override. */
export const jobTypesRouter = configRouter("job_type", { row: ZJobTypeRow, create: ZJobTypeCreate, update: ZJobTypeUpdate });

/** Tenants: fair-share weight, running quota, admission rate and backlog caps, ceilings. */
export const tenantsRouter = configRouter("tenant", { row: ZTenantRow, create: ZTenantCreate, update: ZTenantUpdate });

/** Resource keys: shared scarce resources with their concurrency and rate limits. */
export const resourceKeysRouter = configRouter("resource_key", { row: ZResourceKeyRow, create: ZResourceKeyCreate, update: ZResourceKeyUpdate });
