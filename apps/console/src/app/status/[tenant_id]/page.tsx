import { JOB_STATES } from "@porter/contracts";
import type { Metadata } from "next";
import { notFound } from "next/navigation";
import { getPrisma, readOnReplica } from "../../../server/db";
import type { StatusAccess } from "../../../server/status-access";
import { loadStatusJobs, parseStatusQuery, type StatusQuery, type StatusTenant, statusTenant } from "../../../server/status-page";
import { LiveJob, StatusLive } from "./live";
import { readLsn, statusRequest } from "./request";
import { Failure, stateLabel, Time } from "./ui";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Status", robots: { index: false, follow: false } };

// The tenant status page (issue 13, deliverable 3): the tenant's name and accent, its jobs by
// state, and its recent jobs (cursor-paginated; state and job type filters in the URL query, so
// links and the form work without JavaScript), each with its state, a live progress bar while
// running and the tenant-safe failure; limited to the link's job types. Outside the (console)
// group: no console sign-in, no console chrome. Authorised by the status cookie of a followed link
// (re-checked on every request) or an operator's console session; anything else is a 404.
// proxy.ts sends `Cache-Control: private, no-store` and CSP frame-ancestors from the tenant's
// status_origins. Live updates: ./live.tsx.
const STATES: readonly string[] = JOB_STATES;

const href = (tenantId: string, q: Partial<StatusQuery>) => {
  const params = new URLSearchParams();
  if (q.state) params.set("state", q.state);
  if (q.type) params.set("type", q.type);
  if (q.cursor) params.set("cursor", q.cursor);
  const s = params.toString();
  return `/status/${encodeURIComponent(tenantId)}${s ? `?${s}` : ""}`;
};

export default async function StatusPage({
  params,
  searchParams,
}: {
  params: Promise<{ tenant_id: string }>;
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const [{ tenant_id }, query] = await Promise.all([params, searchParams]);
  const found = await statusTenant(getPrisma(), await statusRequest(tenant_id));
  if (!found) notFound();
  const { tenant, access } = found;
  return (
    <div className="st-root" style={{ "--st-accent": tenant.accent } as React.CSSProperties}>
      <header className="st-header">
        <h1>{tenant.name}</h1>
        <p className="st-scope">
          Job status{access.jobTypes.length ? ` for ${access.jobTypes.join(", ")}` : ""}
          {access.kind === "link" ? (
            <>
              {" · link valid until "}
              <Time at={access.link.expiresAt.toISOString()} />
            </>
          ) : (
            " · operator view"
          )}
        </p>
      </header>
      <main className="st-main" id="main">
        <StatusLive tenantId={tenant.id}>
          {/* Not under Suspense: a streamed fallback is swapped for the content by a script, and the
              page must work without JavaScript. The loading state is the live line's "Updating…". */}
          <StatusJobsView tenant={tenant} access={access} query={parseStatusQuery(query)} />
        </StatusLive>
      </main>
      <footer className="st-footer">Times in UTC.</footer>
    </div>
  );
}

async function StatusJobsView({ tenant, access, query }: { tenant: StatusTenant; access: StatusAccess; query: StatusQuery }) {
  // On the read replica when it keeps up (docs/scaling.md "Replica reads"); access was checked on the primary.
  const { counts, page } = await readOnReplica(await readLsn(), (db) => loadStatusJobs(db, { tenant, access }, query));
  const q = query;
  const states = [...STATES, ...Object.keys(counts).filter((s) => !STATES.includes(s))];
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  const types = [...new Set([...access.jobTypes, ...page.jobs.map((j) => j.job_type), ...(q.type ? [q.type] : [])])].sort();
  const isFiltered = Boolean(q.state || q.type);
  return (
    <>
      <section aria-label="Jobs by state">
        <ul className="st-counts">
          {states.map((state) => (
            <li key={state} data-state={state} className={q.state === state ? "is-current" : undefined}>
              <a href={href(tenant.id, { state: q.state === state ? null : (state as StatusQuery["state"]), type: q.type })}>
                <span className="st-count" data-testid={`count-${state}`}>
                  {counts[state] ?? 0}
                </span>
                <span className="st-count-label">{stateLabel(state)}</span>
              </a>
            </li>
          ))}
        </ul>
      </section>

      <section aria-labelledby="recent">
        <div className="st-section-head">
          <h2 id="recent">Recent jobs</h2>
          <form className="st-filters" method="get" action={href(tenant.id, {})}>
            <label>
              <span>State</span>
              <select name="state" defaultValue={q.state ?? ""}>
                <option value="">any</option>
                {STATES.map((s) => (
                  <option key={s} value={s}>
                    {stateLabel(s)}
                  </option>
                ))}
              </select>
            </label>
            <label>
              <span>Job type</span>
              <select name="type" defaultValue={q.type ?? ""}>
                <option value="">any</option>
                {types.map((t) => (
                  <option key={t} value={t}>
                    {t}
                  </option>
                ))}
              </select>
            </label>
            <button type="submit">Filter</button>
            {isFiltered ? <a href={href(tenant.id, {})}>Clear</a> : null}
          </form>
        </div>

        {page.jobs.length === 0 ? (
          <p className="st-empty" data-testid="status-empty">
            {isFiltered || q.cursor ? "No jobs match these filters." : total === 0 ? "No jobs yet." : "No jobs to show."}
          </p>
        ) : (
          <ul className="st-jobs" aria-label="Recent jobs">
            {page.jobs.map((j) => (
              <li key={j.job_id} className="st-job" data-job-id={j.job_id}>
                <div className="st-job-head">
                  <a className="st-job-type" href={`${href(tenant.id, {})}/jobs/${j.job_id}`}>
                    {j.job_type}
                  </a>
                  <LiveJob jobId={j.job_id} state={j.state} progress={j.progress} part="state" />
                </div>
                <p className="st-job-meta">
                  <span className="st-id" title={j.job_id}>
                    …{j.job_id.slice(-12)}
                  </span>
                  {" · created "}
                  <Time at={j.created_at} />
                  {j.finished_at ? (
                    <>
                      {" · finished "}
                      <Time at={j.finished_at} />
                    </>
                  ) : null}
                  {j.attempt > 1 || j.state === "RETRY_WAIT" ? ` · attempt ${j.attempt} of ${j.max_attempts}` : null}
                  {j.next_attempt_at ? (
                    <>
                      {" · next attempt "}
                      <Time at={j.next_attempt_at} />
                    </>
                  ) : null}
                </p>
                <LiveJob jobId={j.job_id} state={j.state} progress={j.progress} part="progress" />
                {j.state === "SUCCEEDED" ? null : <Failure failure={j.failure} />}
              </li>
            ))}
          </ul>
        )}
        <nav className="st-pager" aria-label="Pages">
          {q.cursor ? <a href={href(tenant.id, { state: q.state, type: q.type })}>← Newest</a> : <span />}
          {page.next_cursor ? (
            <a href={href(tenant.id, { state: q.state, type: q.type, cursor: page.next_cursor })} rel="next">
              Older jobs →
            </a>
          ) : null}
        </nav>
      </section>
    </>
  );
}
