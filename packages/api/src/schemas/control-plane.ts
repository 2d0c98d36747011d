// Inputs and output rows of the control-plane procedures, derived from the one declaration of each
// entity in @porter/contracts/control-plane (fields, bounds, defaults, cross-field rules). Shared
// by the server (tRPC `.input()`/`.output()`) and the console's forms, which validate with these
// same schemas before sending and show field errors. Only zod here: the console's client bundle
// imports this file.
import { createSchema, fieldsSchema, JOB_TYPE, POOL, QUEUE, RESOURCE_KEY, rowSchema, TENANT, updateSchema } from "@porter/contracts/control-plane";

export {
  ZApiKeyCreate,
  ZApiKeyRevoke,
  ZConfigId,
  ZPassword,
  ZReason,
  ZRole,
  ZUserCreate,
  ZUserUpdate,
} from "@porter/contracts/control-plane";

export const ZPoolFields = fieldsSchema(POOL);
export const ZPoolCreate = createSchema(POOL);
export const ZPoolUpdate = updateSchema(POOL);
export const ZPoolRow = rowSchema(POOL);

export const ZResourceKeyFields = fieldsSchema(RESOURCE_KEY);
export const ZResourceKeyCreate = createSchema(RESOURCE_KEY);
export const ZResourceKeyUpdate = updateSchema(RESOURCE_KEY);
export const ZResourceKeyRow = rowSchema(RESOURCE_KEY);

export const ZQueueFields = fieldsSchema(QUEUE);
export const ZQueueCreate = createSchema(QUEUE);
export const ZQueueUpdate = updateSchema(QUEUE);
export const ZQueueRow = rowSchema(QUEUE);

export const ZJobTypeFields = fieldsSchema(JOB_TYPE);
export const ZJobTypeCreate = createSchema(JOB_TYPE);
export const ZJobTypeUpdate = updateSchema(JOB_TYPE);
export const ZJobTypeRow = rowSchema(JOB_TYPE);

export const ZTenantFields = fieldsSchema(TENANT);
export const ZTenantCreate = createSchema(TENANT);
export const ZTenantUpdate = updateSchema(TENANT);
export const ZTenantRow = rowSchema(TENANT);
