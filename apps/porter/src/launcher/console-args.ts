/**
 * The console process's node arguments: the console's own server (`apps/console/src/server/serve.ts`:
 * Next's custom server, with the producer API answered before Next), as the bundle `npm start`
 * builds of it (bundles.ts), with tsx (for `next.config.ts`) and the parent guard loaded. It binds `PORT` and `HOST` from its environment — HOST loopback (127.0.0.1) unless set,
 * never every interface by accident.
 */
export const consoleStartArgs = (options: { server: string; guard: string }): string[] => [
  // V8's own young generation: the 2 × 32 MB one given here since the fourth pass cost the
  // producer API's server CPU once a 1000-job batch no longer went through zod (docs/performance.md
  // "Issue 15: the HTTP producer API", fifth pass).
  "--import",
  "tsx",
  "--import",
  options.guard,
  options.server,
];

/** The host to reach the console at from this machine: a wildcard bind answers on loopback. */
export const localHostOf = (host: string): string =>
  host === "0.0.0.0" || host === "::" || host === "[::]" ? "127.0.0.1" : host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
