import type { Metadata } from "next";
import { WorkerView } from "./worker-view";

export const metadata: Metadata = { title: "Worker" };

/** One worker: its facts, what it runs now and its recent attempts. */
export default async function WorkerPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  return <WorkerView workerId={decodeURIComponent(id)} />;
}
