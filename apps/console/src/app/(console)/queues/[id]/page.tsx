import type { Metadata } from "next";
import { QueueView } from "./queue-view";

export const metadata: Metadata = { title: "Queue" };

/** One queue: its signals, flow charts, and its tenants and job types (issue 14). */
export default async function QueuePage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  return <QueueView queueId={decodeURIComponent(id)} />;
}
