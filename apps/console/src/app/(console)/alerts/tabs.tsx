"use client";
import Link from "next/link";
import { usePathname } from "next/navigation";

/** The Alerts section's tabs. */
export function AlertTabs() {
  const pathname = usePathname();
  return (
    <nav className="tabs" aria-label="Alerts">
      {[
        { href: "/alerts", label: "Alerts" },
        { href: "/alerts/rules", label: "Rules & webhook" },
      ].map((t) => (
        <Link key={t.href} className="tab-link" href={t.href} aria-current={pathname === t.href ? "page" : undefined}>
          {t.label}
        </Link>
      ))}
    </nav>
  );
}
