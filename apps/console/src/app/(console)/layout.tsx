import { redirect } from "next/navigation";
import type { ReactNode } from "react";
import { AlertBanner } from "../../components/alert-banner";
import { Nav } from "../../components/nav";
import { Providers } from "../../components/providers";
import { getConsoleSession } from "../../server/auth";
import { getLogger } from "../../server/logger";

export const dynamic = "force-dynamic";

/** Every console page: signed-in users only (the role is enforced again by each procedure). */
export default async function ConsoleLayout({ children }: { children: ReactNode }) {
  let session: Awaited<ReturnType<typeof getConsoleSession>>;
  try {
    session = await getConsoleSession();
  } catch (error) {
    // The session's user is read from the database: without it, say so rather than crash.
    getLogger().warn("console page could not read the session's user", { err: (error as Error).message });
    return (
      <main className="signin" id="main">
        <div className="state state-error" role="alert">
          <strong>Cannot reach the database</strong>
          <p>
            The console is running but PostgreSQL did not answer. Check that it is up and that <code>DATABASE_URL</code> points at it, then reload this page.
          </p>
        </div>
      </main>
    );
  }
  if (!session) redirect("/signin");
  const viewer = { email: session.email, name: session.name ?? "", role: session.role };
  return (
    <Providers viewer={viewer}>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <div className="shell">
        <Nav />
        <main id="main" className="content" tabIndex={-1}>
          <AlertBanner />
          {children}
        </main>
      </div>
    </Providers>
  );
}
