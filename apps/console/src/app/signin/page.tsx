import type { Metadata } from "next";
import { redirect } from "next/navigation";
import { getConsoleSession } from "../../server/auth";
import { SignInForm } from "./sign-in-form";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Sign in" };

/** Only local paths: a sign-in link must not bounce the user to another site. */
const safeCallback = (value: string | string[] | undefined): string => {
  const v = Array.isArray(value) ? value[0] : value;
  return v && v.startsWith("/") && !v.startsWith("//") && !v.startsWith("/\\") ? v : "/";
};

export default async function SignInPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const params = await searchParams;
  const callbackUrl = safeCallback(params.callbackUrl);
  // Already signed in: straight on. (A database that is down shows up when signing in.)
  if (await getConsoleSession().catch(() => null)) redirect(callbackUrl);
  return (
    <main className="signin" id="main">
      <div className="signin-card">
        <p className="brand">Porter</p>
        <h1>Sign in to the console</h1>
        <SignInForm callbackUrl={callbackUrl} hasError={Boolean(params.error)} />
        <p className="muted small">
          The first admin is created by <code>npm start</code> (<code>PORTER_ADMIN_EMAIL</code>, default admin@porter.local); its password
          is printed once, or set with <code>PORTER_ADMIN_PASSWORD</code>.
        </p>
      </div>
    </main>
  );
}
