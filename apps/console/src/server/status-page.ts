import { AppError, JOB_STATES, type TJobState } from "@porter/contracts";
import { type Db, type TenantJobDetail, type TenantJobPage, tenantCountsByState, tenantJob, tenantRecentJobs } from "@porter/core";
import type { ControlDb } from "@porter/db/prisma";
import { type StatusAccess, statusPageAccess } from "./status-access";

// What the tenant status pages load (issue 13, deliverable 3), apart from Next: authorise (the
// status cookie's link, re-checked, or an operator's session), then read through core's tenant
// reads within the link's job types. null → the page answers 404, the same for an unknown tenant,
// a refused link, another tenant's job and a job type outside the link — nothing tells them apart.
// Kept out of the page files so the integration tests call it on a real database.

/** Porter's own accent (globals.css --accent), used when the tenant has none. */
export const PORTER_ACCENT = "#2451c7";

export type StatusTenant = { id: string; name: string; accent: string };
export type StatusRequest = { tenantId: string; cookie: string | undefined; secret: string; sessionRole: string | null };
/** The list's filters, from the URL query (so links and the no-JS form work). */
export type StatusQuery = { state: TJobState | null; type: string | null; cursor: string | null };

/** The tenant of a status request if the request may see its page (else null → 404). */
export const statusTenant = async (prisma: ControlDb, req: StatusRequest): Promise<{ tenant: StatusTenant; access: StatusAccess } | null> => {
  const access = await statusPageAccess(prisma, req);
  if (!access) return null;
  const row = await prisma.tenant.findUnique({ where: { id: req.tenantId }, select: { id: true, name: true, statusAccent: true } });
  if (!row) return null;
  return { tenant: { id: row.id, name: row.name || row.id, accent: row.statusAccent ?? PORTER_ACCENT }, access };
};

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** The URL query → filters; anything malformed is dropped (an unknown state, an overlong type, a bad cursor). */
export const parseStatusQuery = (query: Record<string, string | string[] | undefined>): StatusQuery => {
  const state = first(query.state)?.toUpperCase();
  const type = first(query.type)?.trim();
  const cursor = first(query.cursor);
  return {
    state: state && (JOB_STATES as readonly string[]).includes(state) ? (state as TJobState) : null,
    type: type && type.length <= 200 ? type : null,
    cursor: cursor && /^[A-Za-z0-9_-]{22}$/.test(cursor) ? cursor : null,
  };
};

export type StatusJobs = { counts: Record<string, number>; page: TenantJobPage; query: StatusQuery };

/** The counts by state and one page of recent jobs of an authorised tenant, within its link's job types. */
export const loadStatusJobs = async (db: Db, found: { tenant: StatusTenant; access: StatusAccess }, query: StatusQuery): Promise<StatusJobs> => {
  const scope = { tenantId: found.tenant.id, jobTypes: found.access.jobTypes };
  const read = (cursor: string | null) => tenantRecentJobs(db, { ...scope, state: query.state, jobType: query.type, cursor, limit: 20 });
  const [counts, page] = await Promise.all([
    tenantCountsByState(db, scope.tenantId, scope.jobTypes),
    // A cursor that does not decode (hand-edited link): the first page instead of an error.
    read(query.cursor).catch((e: unknown) => (e instanceof AppError ? read(null) : Promise.reject(e))),
  ]);
  return { counts, page, query };
};

/** /status/<tenant_id>: tenant, access, counts by state and one page of recent jobs; null → 404. */
export const loadStatusPage = async (
  prisma: ControlDb,
  db: Db,
  req: StatusRequest & { query: StatusQuery },
): Promise<({ tenant: StatusTenant; access: StatusAccess } & StatusJobs) | null> => {
  const found = await statusTenant(prisma, req);
  return found ? { ...found, ...(await loadStatusJobs(db, found, req.query)) } : null;
};

/** /status/<tenant_id>/jobs/<job_id>: tenant, access and the job's tenant-safe detail; null → 404. */
export const loadStatusJob = async (
  prisma: ControlDb,
  db: Db,
  req: StatusRequest & { jobId: string },
): Promise<{ tenant: StatusTenant; access: StatusAccess; job: TenantJobDetail } | null> => {
  const found = await statusTenant(prisma, req);
  if (!found) return null;
  const job = await tenantJob(db, { tenantId: found.tenant.id, jobTypes: found.access.jobTypes, jobId: req.jobId });
  return job ? { ...found, job } : null;
};
