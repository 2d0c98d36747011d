import type { RequestHead } from "./context";

/** Why a cookie-authenticated mutation was refused, or null when it may proceed. */
export type CrossSiteRefusal = string | null;

const hostOf = (origin: string): string | null => {
  try {
    return new URL(origin).host.toLowerCase();
  } catch {
    return null;
  }
};

/**
 * Cross-site request forgery check for console mutations (cookie sessions). next-auth's CSRF
 * token covers only its own routes, so tRPC mutations must prove they come from a page of ours:
 *
 * - `Content-Type: application/json` — a cross-site HTML form cannot send it, and a cross-site
 *   `fetch` that sets it needs a CORS preflight we never grant;
 * - `Sec-Fetch-Site`, when the browser sends it, is `same-origin`;
 * - `Origin` is present and names this host (the `Host`/`X-Forwarded-Host` the request came to)
 *   or one of `trustedOrigins` (the console's public URL behind a proxy).
 *
 * Producer calls are not checked here: they authenticate with a Bearer key, which a browser never
 * attaches on its own. Returns why the request is refused, or null.
 */
export const refuseCrossSite = (req: RequestHead, trustedOrigins: readonly string[] = []): CrossSiteRefusal => {
  const contentType = (req.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (contentType !== "application/json") return "console mutations must be sent as application/json";
  const fetchSite = req.headers.get("sec-fetch-site");
  if (fetchSite !== null && fetchSite !== "same-origin") return `cross-site request refused (Sec-Fetch-Site: ${fetchSite})`;
  const origin = req.headers.get("origin");
  if (!origin || origin === "null") return "cross-site request refused: the Origin header is missing";
  const originHost = hostOf(origin);
  const hosts = [req.headers.get("x-forwarded-host"), req.headers.get("host"), hostOf(req.url)].flatMap((h) =>
    h ? h.split(",").map((part) => part.trim().toLowerCase()) : [],
  );
  const isTrusted = trustedOrigins.some((trusted) => hostOf(trusted) === originHost && new URL(trusted).protocol === new URL(origin).protocol);
  if (!originHost || (!hosts.includes(originHost) && !isTrusted)) return `cross-site request refused (Origin: ${origin})`;
  return null;
};
