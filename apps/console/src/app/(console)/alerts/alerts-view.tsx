"use client";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { Tag } from "../../../components/badges";
import { CursorPager, useCursorPages } from "../../../components/cursor-pages";
import { type Column, DataTable } from "../../../components/data-table";
import { Page } from "../../../components/page";
import { Empty } from "../../../components/states";
import { ago, dateTime } from "../../../lib/format";
import { type RouterOutputs, useTRPC } from "../../../lib/trpc";
import { AlertTabs } from "./tabs";

type Alert = RouterOutputs["dlq"]["alerts"]["list"]["alerts"][number];

export const KIND_LABELS: Record<Alert["kind"], string> = {
  deaths_5m: "new deaths in 5 min",
  unowned_age: "unowned dead jobs too old",
  group_reopened: "a group reopened",
};

const COLUMNS: ReadonlyArray<Column<Alert>> = [
  { header: "State", cell: (a) => (a.state === "firing" ? <Tag tone="bad">firing</Tag> : <Tag tone="ok">resolved</Tag>) },
  { header: "Alert", isWrapping: true, cell: (a) => a.message },
  { header: "Rule", cell: (a) => KIND_LABELS[a.kind] },
  { header: "Queue", cell: (a) => a.queue_id ?? "every queue" },
  {
    header: "Subject",
    cell: (a) => (a.subject.startsWith("group:") ? <Link href={`/dead-letters/${a.subject.slice(6)}`}>{a.subject}</Link> : a.subject),
  },
  { header: "Value", isNumeric: true, cell: (a) => String(a.value) },
  { header: "Fired", cell: (a) => <span title={dateTime(a.fired_at)}>{ago(a.fired_at)}</span> },
  { header: "Resolved", cell: (a) => (a.resolved_at ? <span title={dateTime(a.resolved_at)}>{ago(a.resolved_at)}</span> : "—") },
];

export function AlertsView() {
  const trpc = useTRPC();
  const pages = useCursorPages();
  const query = useQuery({
    ...trpc.dlq.alerts.list.queryOptions({ limit: 50, ...(pages.cursor ? { cursor: pages.cursor } : {}) }),
    placeholderData: keepPreviousData,
    refetchInterval: 10_000,
  });
  const alerts = { ...query, data: query.data?.alerts };
  const firing = query.data?.firing;
  return (
    <Page
      title="Alerts"
      description={
        firing === undefined
          ? "Dead-letter alerts, firing first."
          : firing
            ? `${firing} firing now; firing alerts first, then resolved ones.`
            : "Nothing firing now."
      }
    >
      <AlertTabs />
      <DataTable
        query={alerts}
        columns={COLUMNS}
        rowKey={(a) => a.id}
        caption="Alerts"
        loadingLabel="Loading alerts…"
        rowProps={(a) => ({ className: a.state === "firing" ? "row-firing" : undefined, "data-state": a.state })}
        empty={
          <Empty title="No alerts yet">
            Alert rules (new deaths per 5 min, unowned dead jobs older than T, a group reopened) are evaluated by the maintenance leader.{" "}
            <Link href="/alerts/rules">See the rules</Link>
          </Empty>
        }
      />
      <CursorPager pages={pages} nextCursor={query.data?.next_cursor} shown={query.data?.alerts.length ?? 0} label="Pages of alerts" />
    </Page>
  );
}
