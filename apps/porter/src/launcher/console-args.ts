import { join } from "node:path";

/**
 * The console process's node arguments: the console's own server (`apps/console/src/server/serve.ts`:
 * Next's custom server, with the producer API answered before Next) under tsx and the parent
 * guard. It binds `PORT` and `HOST` from its environment — HOST loopback (127.0.0.1) unless set,
 * never every interface by accident.
 */
export const consoleStartArgs = (options: { root: string; guard: string }): string[] => [
  "--import",
  "tsx",
  "--import",
  options.guard,
  join(options.root, "apps/console/src/server/serve.ts"),
];

/** The host to reach the console at from this machine: a wildcard bind answers on loopback. */
export const localHostOf = (host: string): string =>
  host === "0.0.0.0" || host === "::" || host === "[::]" ? "127.0.0.1" : host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
