/**
 * `next start`'s arguments for the console: its port and the interface it binds — `HOST`,
 * loopback (127.0.0.1) unless set, never every interface by accident (Next's own default).
 */
export const consoleStartArgs = (options: { port: number; host: string }): string[] => ["start", "-p", String(options.port), "-H", options.host];

/** The host to reach the console at from this machine: a wildcard bind answers on loopback. */
export const localHostOf = (host: string): string =>
  host === "0.0.0.0" || host === "::" || host === "[::]" ? "127.0.0.1" : host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
