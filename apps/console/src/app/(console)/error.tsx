"use client";
import { useEffect } from "react";

/** A page that failed to render: say so, offer a retry, keep the navigation usable. */
export default function ConsoleError({ error, reset }: { error: Error & { digest?: string }; reset: () => void }) {
  useEffect(() => {
    document.title = "Error · Porter";
  }, []);
  return (
    <div className="state state-error" role="alert">
      <strong>This page failed to load</strong>
      <p>
        The console could not render it{error.digest ? ` (reference ${error.digest})` : ""}. If the database is down, it answers again once PostgreSQL is back.
      </p>
      <button type="button" className="button" onClick={reset}>
        Try again
      </button>
    </div>
  );
}
