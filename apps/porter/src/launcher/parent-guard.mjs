// Preloaded (`node --import <this file>`) into every long-lived child of `npm start` (console,
// workers) so that none outlives the launcher, even when the launcher is killed with SIGKILL and
// cannot clean up. The launcher gives each child a stdin pipe it never writes to; the pipe closes
// only when the launcher is gone, and the child then stops itself with SIGTERM — its normal,
// graceful shutdown (a worker drains) — and with SIGKILL if that has not ended it in time.
// Plain JavaScript because `next start` loads it without a TypeScript loader.
if (process.env.PORTER_PARENT_GUARD === "1") {
  // Only this process: its own children (if any) are not guarded by this pipe.
  delete process.env.PORTER_PARENT_GUARD;
  const graceMs = Number(process.env.PORTER_PARENT_GUARD_GRACE_MS ?? 60_000);
  const stdin = process.stdin;
  stdin.on("error", () => {});
  stdin.on("end", () => {
    process.kill(process.pid, "SIGTERM");
    setTimeout(() => process.kill(process.pid, "SIGKILL"), graceMs).unref();
  });
  stdin.resume();
  // Watching the pipe must not keep an otherwise finished process alive.
  if (typeof stdin.unref === "function") stdin.unref();
}
