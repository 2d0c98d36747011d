"use client";
import Link from "next/link";
import { usePathname } from "next/navigation";

const TABS = [
  { href: "/dead-letters", label: "Failure groups" },
  { href: "/dead-letters/redrives", label: "Redrives" },
  { href: "/dead-letters/reason-codes", label: "Reason codes" },
] as const;

/** The Dead letters section's tabs (links: each is a page of its own). */
export function DeadLetterTabs() {
  const pathname = usePathname();
  return (
    <nav className="tabs" aria-label="Dead letters">
      {TABS.map((t) => (
        <Link key={t.href} className="tab-link" href={t.href} aria-current={pathname === t.href ? "page" : undefined}>
          {t.label}
        </Link>
      ))}
    </nav>
  );
}
