import Link from "next/link";

export default function NotFound() {
  return (
    <main className="signin" id="main">
      <div className="signin-card">
        <p className="brand">Porter</p>
        <h1>Page not found</h1>
        <p>
          <Link href="/">Back to the overview</Link>
        </p>
      </div>
    </main>
  );
}
