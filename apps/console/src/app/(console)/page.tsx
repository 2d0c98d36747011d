import { checkHealth } from "@porter/api";
import { JOB_STATES, type TJobState } from "@porter/contracts";
import { countsByState } from "@porter/core";
import { getPool } from "../server/db";
import { getLogger } from "../server/logger";

export const dynamic = "force-dynamic";

type QueueRow = { queueId: string; counts: Partial<Record<TJobState, number>>; total: number };

type Overview = { kind: "down" } | { kind: "up"; queues: QueueRow[]; totals: Partial<Record<TJobState, number>>; total: number };

const loadOverview = async (): Promise<Overview> => {
  const pool = getPool();
  const health = await checkHealth(pool);
  if (health.status !== "ok") return { kind: "down" };
  let counts: Awaited<ReturnType<typeof countsByState>>;
  try {
    counts = await countsByState(pool);
  } catch (error) {
    getLogger().warn("home page could not read job counts", { err: (error as Error).message });
    return { kind: "down" };
  }
  const byQueue = new Map<string, QueueRow>();
  const totals: Partial<Record<TJobState, number>> = {};
  let total = 0;
  for (const { queue_id, state, count } of counts) {
    const row = byQueue.get(queue_id) ?? { queueId: queue_id, counts: {}, total: 0 };
    const key = state as TJobState;
    row.counts[key] = (row.counts[key] ?? 0) + count;
    row.total += count;
    totals[key] = (totals[key] ?? 0) + count;
    total += count;
    byQueue.set(queue_id, row);
  }
  const queues = [...byQueue.values()].sort((a, b) => a.queueId.localeCompare(b.queueId));
  return { kind: "up", queues, totals, total };
};

const formatCount = (n: number | undefined) => (n ? n.toLocaleString("en-US") : "—");

/** The console's home: health, then jobs by queue and state. */
export default async function HomePage() {
  const overview = await loadOverview();
  return (
    <>
      <section className="summary">
        <h1>Overview</h1>
        <p className={`health health-${overview.kind}`} role="status">
          <span className="dot" aria-hidden="true" />
          {overview.kind === "up" ? "Healthy — database up" : "Database unreachable"}
        </p>
      </section>

      {overview.kind === "down" ? (
        <section className="notice notice-error">
          <h2>Cannot reach the database</h2>
          <p>
            The console is running but PostgreSQL did not answer. Check that the database is up and that
            <code>DATABASE_URL</code> points at it; this page reloads its numbers on every visit.
          </p>
        </section>
      ) : overview.total === 0 ? (
        <section className="notice">
          <h2>No jobs yet</h2>
          <p>
            Enqueue one with <code>npm run porter -- enqueue --type diag.sleep --tenant tenant_A --payload {"'{\"ms\":100}'"}</code>{" "}
            or through the producer API (<code>POST /api/trpc/producer.enqueue</code>).
          </p>
        </section>
      ) : (
        <section>
          <h2>Jobs by queue and state</h2>
          <div className="table-wrap">
            <table className="counts">
              <thead>
                <tr>
                  <th scope="col">Queue</th>
                  {JOB_STATES.map((state) => (
                    <th scope="col" key={state} className={`num state-${state.toLowerCase()}`}>
                      {state}
                    </th>
                  ))}
                  <th scope="col" className="num">
                    Total
                  </th>
                </tr>
              </thead>
              <tbody>
                {overview.queues.map((row) => (
                  <tr key={row.queueId}>
                    <th scope="row">{row.queueId}</th>
                    {JOB_STATES.map((state) => (
                      <td key={state} className="num">
                        {formatCount(row.counts[state])}
                      </td>
                    ))}
                    <td className="num total">{formatCount(row.total)}</td>
                  </tr>
                ))}
              </tbody>
              <tfoot>
                <tr>
                  <th scope="row">All queues</th>
                  {JOB_STATES.map((state) => (
                    <td key={state} className="num">
                      {formatCount(overview.totals[state])}
                    </td>
                  ))}
                  <td className="num total">{formatCount(overview.total)}</td>
                </tr>
              </tfoot>
            </table>
          </div>
        </section>
      )}
    </>
  );
}
