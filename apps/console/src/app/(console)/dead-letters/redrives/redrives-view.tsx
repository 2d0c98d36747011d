"use client";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { CursorPager, useCursorPages } from "../../../../components/cursor-pages";
import { type Column, DataTable } from "../../../../components/data-table";
import { RedriveProgress, RedriveStatus } from "../../../../components/dlq";
import { Page } from "../../../../components/page";
import { Empty } from "../../../../components/states";
import { ago, dateTime } from "../../../../lib/format";
import { type RouterOutputs, useTRPC } from "../../../../lib/trpc";
import { DeadLetterTabs } from "../tabs";

type Redrive = RouterOutputs["dlq"]["redrives"]["list"]["redrives"][number];

/** What a redrive selected, in words, with a link to the group when it was one. */
const selectionOf = (r: Redrive) => {
  const s = r.selection as { group_id?: string; filter?: Record<string, string>; job_ids?: string[] };
  if (s.group_id) return <Link href={`/dead-letters/${s.group_id}?redrive=${r.redrive_id}`}>group {s.group_id}</Link>;
  if (s.job_ids) return `${s.job_ids.length} selected job${s.job_ids.length === 1 ? "" : "s"}`;
  if (s.filter)
    return (
      Object.entries(s.filter)
        .map(([k, v]) => `${k}=${v}`)
        .join(", ") || "every dead job"
    );
  return "—";
};

const COLUMNS: ReadonlyArray<Column<Redrive>> = [
  { header: "Redrive", className: "mono", cell: (r) => <span title={r.redrive_id}>{r.redrive_id.slice(-12)}</span> },
  { header: "Status", cell: (r) => <RedriveStatus status={r.status} /> },
  { header: "Selection", cell: selectionOf },
  { header: "Progress", cell: (r) => <RedriveProgress redrive={r} /> },
  { header: "Velocity", isNumeric: true, cell: (r) => `${r.rate_per_s}/s${r.force ? " · forced" : ""}` },
  { header: "By", cell: (r) => r.actor },
  { header: "Started", cell: (r) => <span title={dateTime(r.created_at)}>{ago(r.created_at)}</span> },
  { header: "Reason", isWrapping: true, cell: (r) => r.reason ?? "—" },
];

export function RedrivesView() {
  const trpc = useTRPC();
  const pages = useCursorPages();
  const redrives = useQuery({
    ...trpc.dlq.redrives.list.queryOptions({ limit: 25, ...(pages.cursor ? { cursor: pages.cursor } : {}) }),
    placeholderData: keepPreviousData,
    // Live while any shown redrive runs.
    refetchInterval: (q) => (q.state.data?.redrives.some((r) => r.status === "running") ? 1_000 : 10_000),
  });
  return (
    <Page
      title="Dead letters"
      description="Redrives move dead jobs back to READY at a chosen velocity, as durable state: they survive a crash and can be aborted."
    >
      <DeadLetterTabs />
      <DataTable
        query={{ ...redrives, data: redrives.data?.redrives }}
        columns={COLUMNS}
        rowKey={(r) => r.redrive_id}
        caption="Redrives"
        loadingLabel="Loading redrives…"
        empty={
          <Empty title="No redrives yet">
            Start one from a failure group's Redrive panel, or with <code>npm run porter -- dlq redrive --group G</code>.
          </Empty>
        }
      />
      <CursorPager pages={pages} nextCursor={redrives.data?.next_cursor} shown={redrives.data?.redrives.length ?? 0} label="Pages of redrives" />
    </Page>
  );
}
