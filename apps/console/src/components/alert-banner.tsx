"use client";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { usePathname } from "next/navigation";
import { useTRPC } from "../lib/trpc";

/**
 * Every console page: a banner while dead-letter alerts fire (their count, the first one, a link to
 * the list). A polite status, not an alert: it is there on every page load while they fire.
 */
export function AlertBanner() {
  const trpc = useTRPC();
  const pathname = usePathname();
  const alerts = useQuery({ ...trpc.dlq.alerts.list.queryOptions({ state: "firing", limit: 1 }), refetchInterval: 15_000, retry: false });
  const firing = alerts.data?.firing ?? 0;
  if (firing === 0 || pathname === "/alerts") return null;
  const first = alerts.data?.alerts[0];
  return (
    <div className="alert-banner" role="status" data-testid="alert-banner">
      <strong>
        {firing} alert{firing === 1 ? "" : "s"} firing
      </strong>
      {first ? <span> — {first.message}</span> : null} <Link href="/alerts">See alerts</Link>
    </div>
  );
}
