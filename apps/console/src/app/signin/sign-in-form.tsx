"use client";
import { useRouter } from "next/navigation";
import { signIn } from "next-auth/react";
import { type FormEvent, useState } from "react";
import { FormError } from "../../components/form-error";
import { safeCallbackPath } from "../../lib/safe-callback";

/** Email and password; a refusal never says which of the two was wrong. */
export function SignInForm({ callbackUrl, error: initialError }: { callbackUrl: string; error: string | null }) {
  const router = useRouter();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(
    initialError === "TooManyAttempts"
      ? "Too many failed sign-ins for this account or from this address. Wait a minute, then try again."
      : initialError
        ? "Sign-in failed. Check your email and password."
        : null,
  );
  const [isBusy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!email.trim() || !password) {
      setError("Enter your email and password.");
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const result = await signIn("credentials", { email: email.trim(), password, redirect: false });
      if (result?.status === 429 || result?.error === "TooManyAttempts") {
        setError("Too many failed sign-ins for this account or from this address. Wait a minute, then try again.");
        return;
      }
      if (!result || result.error) {
        setError(
          !result || result.error === "CredentialsSignin"
            ? "Invalid email or password, or the account is disabled."
            : "Sign-in is unavailable right now: the console could not check your password. Try again shortly.",
        );
        return;
      }
      // Checked again here: the page passed a safe path, and this is where the browser goes.
      router.replace(safeCallbackPath(callbackUrl, window.location.origin));
      router.refresh();
    } catch {
      setError("Could not reach the console. Try again.");
    } finally {
      setBusy(false);
    }
  };

  return (
    <form onSubmit={submit} className="signin-form" noValidate>
      <div className="field">
        <label htmlFor="email">Email</label>
        {/* biome-ignore lint/a11y/noAutofocus: the page holds this one form and nothing to read before it; starting in its first field is what a user who opens it came to do */}
        <input id="email" name="email" type="email" autoComplete="username" value={email} onChange={(e) => setEmail(e.target.value)} autoFocus required />
      </div>
      <div className="field">
        <label htmlFor="password">Password</label>
        <input
          id="password"
          name="password"
          type="password"
          autoComplete="current-password"
          value={password}
          onChange={(e) => setPassword(e.target.value)}
          required
        />
      </div>
      <FormError message={error} />
      <button type="submit" className="button primary wide" disabled={isBusy}>
        {isBusy ? "Signing in…" : "Sign in"}
      </button>
    </form>
  );
}
