"use client";
import { useQuery } from "@tanstack/react-query";
import { Tag } from "../../../../components/badges";
import { type Column, DataTable, rowsList } from "../../../../components/data-table";
import { percent, RatioBar } from "../../../../components/ratio-bar";
import { QueryView } from "../../../../components/states";
import { count, dateTime } from "../../../../lib/format";
import { type RouterOutputs, useTRPC } from "../../../../lib/trpc";

type Usage = RouterOutputs["tenants"]["usage"];
type PoolUsage = Usage["pools"][number];
type KeyUsage = Usage["resource_keys"][number];

const rate = (n: number) => `${n < 10 ? n.toFixed(2) : Math.round(n)}/s`;

const POOL_COLUMNS: ReadonlyArray<Column<PoolUsage>> = [
  { header: "Pool", cell: (p) => p.pool_id },
  {
    header: "Running share",
    cell: (p) =>
      p.pool_running === 0 ? (
        <span className="muted">nothing running</span>
      ) : (
        <RatioBar
          value={p.running}
          max={p.pool_running}
          text={`${percent(p.running_share)} (${count(p.running)} of ${count(p.pool_running)})`}
          isLimit={false}
        />
      ),
  },
  {
    header: "Start share",
    cell: (p) =>
      p.pool_starts === 0 ? (
        <span className="muted">no starts</span>
      ) : (
        <RatioBar value={p.starts} max={p.pool_starts} text={`${percent(p.start_share)} (${count(p.starts)} of ${count(p.pool_starts)})`} isLimit={false} />
      ),
  },
  {
    header: "Weight share",
    cell: (p) =>
      p.weight_share === null ? (
        <span className="muted" title="No claimable work in the pool now: the tenant claims no share">
          not waiting
        </span>
      ) : (
        <RatioBar
          value={p.weight_share}
          max={1}
          isLimit={false}
          text={`${percent(p.weight_share)} (weight of ${count(p.active_weight)}, ${count(p.active_tenants)} active)`}
          testId={`weight-share-${p.pool_id}`}
        />
      ),
  },
];

const KEY_COLUMNS: ReadonlyArray<Column<KeyUsage>> = [
  {
    header: "Resource key",
    cell: (k) => (
      <>
        {k.id}{" "}
        {k.is_throttled ? (
          <Tag tone="warn" title={`Throttled until ${dateTime(k.throttled_until)}`}>
            throttled
          </Tag>
        ) : null}
      </>
    ),
  },
  {
    header: "In use / limit",
    cell: (k) => <RatioBar value={k.in_use} max={k.limit} text={`${count(k.in_use)}${k.limit === null ? "" : ` / ${count(k.limit)}`}`} />,
  },
  { header: "This tenant's", isNumeric: true, cell: (k) => count(k.tenant_in_use) },
  {
    header: "Rate / limit",
    cell: (k) => <RatioBar value={k.rate_per_s} max={k.rate_limit} text={`${rate(k.rate_per_s)}${k.rate_limit === null ? "" : ` / ${rate(k.rate_limit)}`}`} />,
  },
  { header: "This tenant's rate", isNumeric: true, cell: (k) => rate(k.tenant_rate_per_s) },
];

/** The tenant's usage against the scheduling policy, refreshed every few seconds (docs/observability.md "Console pages"). */
export function TenantUsageSection({ tenantId }: { tenantId: string }) {
  const trpc = useTRPC();
  const usage = useQuery({ ...trpc.tenants.usage.queryOptions({ tenant_id: tenantId }), refetchInterval: 5_000 });
  return (
    <section className="panel" aria-labelledby="usage-title" data-testid="tenant-usage">
      <h2 id="usage-title">Usage</h2>
      <QueryView query={usage} loadingLabel="Loading usage…">
        {(u) => (
          <>
            <dl className="kv inline">
              <dt>Running / quota</dt>
              <dd data-testid="usage-quota">
                <RatioBar
                  value={u.running}
                  max={u.max_running}
                  text={`${count(u.running)}${u.max_running === null ? "" : ` / ${count(u.max_running)}`}`}
                  noMax="no quota"
                />
              </dd>
              <dt>Weight</dt>
              <dd>{count(u.weight)}</dd>
              <dt>429 throttles</dt>
              <dd data-testid="usage-throttles">
                {rate(u.throttle_per_s)} <span className="muted">over {Math.round(u.window_s / 60)} min</span>
              </dd>
              <dt>Throttled keys now</dt>
              <dd data-testid="usage-throttled-keys">{u.throttled_keys.length ? u.throttled_keys.join(", ") : "none"}</dd>
            </dl>
            <DataTable
              query={rowsList(u.pools)}
              columns={POOL_COLUMNS}
              rowKey={(p) => p.pool_id}
              caption={`Share of each pool over the last ${Math.round(u.window_s / 60)} min and now`}
              rowProps={(p) => ({ "data-testid": `usage-pool-${p.pool_id}` })}
              empty={<p className="muted">No work of this tenant is running, waiting or started in the window.</p>}
            />
            {u.resource_keys.length ? (
              <DataTable
                query={rowsList(u.resource_keys)}
                columns={KEY_COLUMNS}
                rowKey={(k) => k.id}
                caption="Resource keys its work uses"
                rowProps={(k) => ({ "data-testid": `usage-key-${k.id}` })}
                empty={null}
              />
            ) : null}
          </>
        )}
      </QueryView>
    </section>
  );
}
