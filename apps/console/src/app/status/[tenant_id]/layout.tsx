import type { ReactNode } from "react";
import "./status.css";

// The tenant status pages' own look (status.css): the tenant's name and accent, no console chrome.
export default function StatusLayout({ children }: { children: ReactNode }) {
  return children;
}
