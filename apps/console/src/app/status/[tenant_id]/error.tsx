"use client";

// A status page that failed to render (the database unreachable, …): say so, offer a retry. The
// error itself is not shown (it is the server's, not the tenant's).
export default function StatusError({ reset }: { error: Error; reset: () => void }) {
  return (
    <div className="st-root">
      <main className="st-main st-message" id="main">
        <h1>Status unavailable</h1>
        <p>The job status could not be loaded just now.</p>
        <button type="button" onClick={() => reset()}>
          Try again
        </button>
      </main>
    </div>
  );
}
