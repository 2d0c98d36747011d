import { redirect } from "next/navigation";
import type { ReactNode } from "react";
import { Nav } from "../../components/nav";
import { Providers } from "../../components/providers";
import { getConsoleSession } from "../../server/auth";

export const dynamic = "force-dynamic";

/** Every console page: signed-in users only (the role is enforced again by each procedure). */
export default async function ConsoleLayout({ children }: { children: ReactNode }) {
  const session = await getConsoleSession();
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
          {children}
        </main>
      </div>
    </Providers>
  );
}
