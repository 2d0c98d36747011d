import type { Metadata } from "next";
import { redirect } from "next/navigation";
import { safeCallbackPath } from "../../lib/safe-callback";
import { consoleOrigin, getConsoleSession } from "../../server/auth";
import { SignInForm } from "./sign-in-form";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Sign in" };

export default async function SignInPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const params = await searchParams;
  // Only a path of ours: a sign-in link must not bounce the user to another site (lib/safe-callback.ts).
  const callbackUrl = safeCallbackPath(params.callbackUrl, consoleOrigin());
  // Already signed in: straight on. (A database that is down shows up when signing in.)
  if (await getConsoleSession().catch(() => null)) redirect(callbackUrl);
  return (
    <main className="signin" id="main">
      <div className="signin-card">
        <p className="brand">Porter</p>
        <h1>Sign in to the console</h1>
        <SignInForm callbackUrl={callbackUrl} error={typeof params.error === "string" ? params.error : params.error ? "error" : null} />
        <p className="muted small">
          The first admin is created by <code>npm start</code> (<code>PORTER_ADMIN_EMAIL</code>, default admin@porter.local); its password is printed once, or
          set with <code>PORTER_ADMIN_PASSWORD</code>.
        </p>
      </div>
    </main>
  );
}
