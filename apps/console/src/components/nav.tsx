"use client";
import type { Role } from "@porter/api";
import Link from "next/link";
import { usePathname } from "next/navigation";
import { signOut } from "next-auth/react";
import { useViewer } from "./providers";

const LINKS: Array<{ href: string; label: string; role?: Role }> = [
  { href: "/", label: "Overview" },
  { href: "/jobs", label: "Jobs" },
  { href: "/dead-letters", label: "Dead letters" },
  { href: "/alerts", label: "Alerts" },
  { href: "/pools", label: "Pools & workers" },
  { href: "/queues", label: "Queues" },
  { href: "/job-types", label: "Job types" },
  { href: "/tenants", label: "Tenants" },
  { href: "/resource-keys", label: "Resource keys" },
  { href: "/api-keys", label: "API keys" },
  { href: "/users", label: "Users", role: "admin" },
  { href: "/audit", label: "Audit log" },
];

/** The console's navigation, the signed-in user with their role, and sign-out. */
export function Nav() {
  const pathname = usePathname();
  const viewer = useViewer();
  const isActive = (href: string) => (href === "/" ? pathname === "/" : pathname === href || pathname.startsWith(`${href}/`));
  return (
    <header className="sidebar">
      <div className="brand-row">
        <Link className="brand" href="/">
          Porter
        </Link>
        <span className="tagline">job queue console</span>
      </div>
      <nav aria-label="Console">
        <ul>
          {LINKS.filter((l) => !l.role || viewer.can(l.role)).map((l) => (
            <li key={l.href}>
              <Link href={l.href} aria-current={isActive(l.href) ? "page" : undefined}>
                {l.label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <div className="whoami">
        <span className="email" title={viewer.email}>
          {viewer.email}
        </span>
        <span className={`tag tag-role role-${viewer.role}`} data-testid="role">
          {viewer.role}
        </span>
        <button type="button" className="button small" onClick={() => void signOut({ callbackUrl: "/signin" })}>
          Sign out
        </button>
      </div>
    </header>
  );
}
