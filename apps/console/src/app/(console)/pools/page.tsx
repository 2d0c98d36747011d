import type { Metadata } from "next";
import { PoolsView } from "./pools-view";

export const metadata: Metadata = { title: "Pools" };

export default function Page() {
  return <PoolsView />;
}
