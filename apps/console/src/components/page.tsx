"use client";
import Link from "next/link";
import type { ReactNode } from "react";
import { FlashMessage } from "./flash";

/**
 * Every console page: breadcrumbs where the page sits under another, the title (the page's one
 * <h1>, which names the page's region), a description, the page's actions on the right, and the
 * flash message of the last action under the header.
 */
export function Page({
  title,
  description,
  actions,
  actionsLabel,
  breadcrumbs,
  titleClassName,
  children,
}: {
  title: ReactNode;
  description?: ReactNode;
  /** Buttons (New …, page-wide actions) or a status (the overview's health). */
  actions?: ReactNode;
  /** Makes the actions a named group ("Job actions"). */
  actionsLabel?: string;
  breadcrumbs?: ReadonlyArray<{ href: string; label: string }>;
  titleClassName?: string;
  children?: ReactNode;
}) {
  return (
    <section aria-labelledby="page-title">
      {breadcrumbs?.length ? (
        <nav className="crumbs" aria-label="Breadcrumb">
          {breadcrumbs.map((b, i) => (
            <span key={b.href}>
              {i ? " / " : null}
              <Link href={b.href}>{b.label}</Link>
            </span>
          ))}
        </nav>
      ) : null}
      <header className="page-head">
        <div>
          <h1 id="page-title" className={titleClassName}>
            {title}
          </h1>
          {description ? <p className="intro">{description}</p> : null}
        </div>
        {actions && actionsLabel ? (
          <fieldset className="row-actions" aria-label={actionsLabel}>
            {actions}
          </fieldset>
        ) : actions ? (
          <div className="row-actions">{actions}</div>
        ) : null}
      </header>
      <FlashMessage />
      {children}
    </section>
  );
}
