import type { Metadata } from "next";
import { RedrivesView } from "./redrives-view";

export const metadata: Metadata = { title: "Redrives" };

/** Durable redrives, newest first, with their progress. */
export default function RedrivesPage() {
  return <RedrivesView />;
}
