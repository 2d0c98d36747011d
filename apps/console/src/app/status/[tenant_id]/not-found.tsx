// The status pages' 404: the same page for an unknown tenant, a refused or expired link, another
// tenant's job and a job outside the link's scope. No console link: a tenant has no console.
export default function StatusNotFound() {
  return (
    <div className="st-root">
      <main className="st-main st-message" id="main">
        <h1>Not found</h1>
        <p>This status page does not exist, or your link has expired or been revoked. Ask for a new link.</p>
      </main>
    </div>
  );
}
