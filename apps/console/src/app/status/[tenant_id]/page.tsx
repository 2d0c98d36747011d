import { JOB_STATES } from "@porter/contracts";
import { tenantCountsByState } from "@porter/core";
import type { Metadata } from "next";
import { cookies } from "next/headers";
import { notFound } from "next/navigation";
import { getConsoleSession } from "../../../server/auth";
import { getPool, getPrisma } from "../../../server/db";
import { getEnv } from "../../../server/env";
import { statusPageAccess } from "../../../server/status-access";
import { STATUS_COOKIE } from "../../../server/status-link-cookie";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Status", robots: { index: false, follow: false } };

// The tenant status page, minimal (issue 13, deliverable 2: what makes a status link usable): the
// tenant's name and its jobs' counts by state, limited to the link's job types. Outside the
// (console) group, so no console sign-in; authorised by the status cookie a followed link sets
// (re-checked on every request) or an operator's console session; anything else is a 404.
// proxy.ts sends `Cache-Control: private, no-store` on /status/*.
// Deliverable 3 is for a later session: recent jobs (paginated, filtered), progress bars, the
// safe failure projection, job detail pages, live updates, CSP frame-ancestors from the tenant's
// status_origins, the tenant's accent colour.
const STATES: readonly string[] = JOB_STATES;

export default async function StatusPage({ params }: { params: Promise<{ tenant_id: string }> }) {
  const { tenant_id: raw } = await params;
  const tenantId = decodeURIComponent(raw);
  const store = await cookies();
  const session = await getConsoleSession().catch(() => null);
  const prisma = getPrisma();
  const access = await statusPageAccess(prisma, {
    tenantId,
    cookie: store.get(STATUS_COOKIE)?.value,
    secret: getEnv().AUTH_SECRET,
    sessionRole: session?.role ?? null,
  });
  if (!access) notFound();
  const tenant = await prisma.tenant.findUnique({ where: { id: tenantId }, select: { id: true, name: true } });
  if (!tenant) notFound();
  const counts = await tenantCountsByState(getPool(), tenantId, access.jobTypes);
  const states = [...STATES, ...Object.keys(counts).filter((s) => !STATES.includes(s))];
  return (
    <main className="status-page" id="main">
      <h1>{tenant.name || tenant.id}</h1>
      <p className="status-scope">
        Job status{access.jobTypes.length ? ` for ${access.jobTypes.join(", ")}` : ""}
        {access.kind === "link" ? ` · link valid until ${access.link.expiresAt.toISOString().slice(0, 16).replace("T", " ")} UTC` : " · operator view"}
      </p>
      <table className="status-counts" aria-label="Jobs by state">
        <thead>
          <tr>
            <th scope="col">State</th>
            <th scope="col">Jobs</th>
          </tr>
        </thead>
        <tbody>
          {states.map((state) => (
            <tr key={state} data-state={state}>
              <th scope="row">{state.toLowerCase().replace("_", " ")}</th>
              <td data-testid={`count-${state}`}>{counts[state] ?? 0}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </main>
  );
}
