import type { Metadata } from "next";
import { ResourceKeysView } from "./resource-keys-view";

export const metadata: Metadata = { title: "Resource keys" };

export default function Page() {
  return <ResourceKeysView />;
}
