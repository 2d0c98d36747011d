import { createHash, timingSafeEqual } from "node:crypto";

/** Whether a host the console binds to is loopback-only (127.0.0.0/8, ::1, localhost). */
export const isLoopbackHost = (host: string): boolean => {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^127(\.\d{1,3}){3}$/.test(h);
};

/**
 * Who may scrape /api/metrics: with `PORTER_METRICS_TOKEN` set, only `Authorization: Bearer
 * <token>` (compared in constant time); without it, anyone — but only while the console listens
 * on loopback, where "anyone" is this machine. Bound wider without a token, the endpoint is
 * refused (503 with the fix in the message) rather than open. Returns the refusal, or null.
 */
export const refuseMetrics = (authorization: string | null, options: { token?: string; host: string }): { status: 401 | 503; message: string } | null => {
  if (!options.token) {
    return isLoopbackHost(options.host)
      ? null
      : { status: 503, message: `metrics are disabled: the console listens on ${options.host}; set PORTER_METRICS_TOKEN and scrape with it as a Bearer token` };
  }
  const presented = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "")?.[1];
  const digest = (s: string) => createHash("sha256").update(s).digest();
  if (!presented || !timingSafeEqual(digest(presented), digest(options.token))) {
    return { status: 401, message: "metrics need Authorization: Bearer <PORTER_METRICS_TOKEN>" };
  }
  return null;
};
