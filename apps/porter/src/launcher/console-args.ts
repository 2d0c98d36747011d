/** The node flag of every process that serves the producer API (the bench's server takes it too). */
export const PRODUCER_SERVER_SEMI_SPACE = "--max-semi-space-size=32";

/**
 * The console process's node arguments: the console's own server (`apps/console/src/server/serve.ts`:
 * Next's custom server, with the producer API answered before Next), as the bundle `npm start`
 * builds of it (bundles.ts), with tsx (for `next.config.ts`) and the parent guard loaded. It binds `PORT` and `HOST` from its environment — HOST loopback (127.0.0.1) unless set,
 * never every interface by accident.
 */
export const consoleStartArgs = (options: { server: string; guard: string }): string[] => [
  // A young generation of 2 × 32 MB (V8's default is 16): a 1000-job enqueueBatch's parsed body
  // and zod's copy of it die young instead of being promoted and collected by mark-compact —
  // the producer API's server CPU per such call 26 → 19–20 ms (docs/performance.md, "Fourth pass").
  PRODUCER_SERVER_SEMI_SPACE,
  "--import",
  "tsx",
  "--import",
  options.guard,
  options.server,
];

/** The host to reach the console at from this machine: a wildcard bind answers on loopback. */
export const localHostOf = (host: string): string =>
  host === "0.0.0.0" || host === "::" || host === "[::]" ? "127.0.0.1" : host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
