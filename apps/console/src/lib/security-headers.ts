// The console's response headers against XSS, clickjacking, sniffing and leaks (proxy.ts sets them
// on every response). Pure, so the policy is unit-tested; the e2e suite checks a served page.

/**
 * The Content-Security-Policy of a response. Next's App Router streams inline scripts (the
 * bootstrap and the RSC payload), so scripts are allowed by a per-request nonce (Next reads it from
 * this same header on the request and puts it on every script it emits) plus `'strict-dynamic'`
 * for the chunks those scripts load — no `'unsafe-inline'` for scripts. Styles allow
 * `'unsafe-inline'`: React and recharts set `style` attributes, which a nonce cannot cover, and a
 * style cannot run code. `frame-ancestors 'none'`: the console is never framed — except a tenant
 * status page, whose tenant lists the origins allowed to embed it (`frameAncestors`, the tenant's
 * status_origins; see {@link frameAncestorSources}). `'unsafe-eval'` only under `next dev` (React's
 * dev tooling).
 */
export const contentSecurityPolicy = (options: HeaderOptions): string =>
  [
    "default-src 'self'",
    `script-src 'self' 'nonce-${options.nonce}' 'strict-dynamic'${options.isDev ? " 'unsafe-eval'" : ""}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    `frame-ancestors ${frameAncestorSources(options.frameAncestors ?? []).join(" ") || "'none'"}`,
    ...(options.isHttps ? ["upgrade-insecure-requests"] : []),
  ].join("; ");

/**
 * The origins of a frame-ancestors directive: each one re-checked as a plain origin (scheme, host
 * or `*.`-wildcard host, optional port) so that nothing stored can add a directive or a source
 * keyword to the header (the contract validates origins on save; this is the header's own guard).
 * Invalid entries are dropped; an empty result means `'none'`.
 */
export const frameAncestorSources = (origins: readonly string[]): string[] => [...new Set(origins.filter((o) => ORIGIN.test(o)).map((o) => o.toLowerCase()))];
const ORIGIN = /^https?:\/\/(\*\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:\d{1,5})?$/;

type HeaderOptions = { nonce: string; isHttps: boolean; isDev?: boolean; frameAncestors?: readonly string[] };

/**
 * Every header proxy.ts adds to a response. HSTS only when served over https. X-Frame-Options is
 * DENY unless `frameAncestors` allows some origin (a status page its tenant embeds): XFO has no
 * allow-list, and DENY would still block the frame where CSP allows it.
 */
export const securityHeaders = (options: HeaderOptions): Record<string, string> => ({
  "content-security-policy": contentSecurityPolicy(options),
  ...(frameAncestorSources(options.frameAncestors ?? []).length ? {} : { "x-frame-options": "DENY" }),
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
  "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=(), browsing-topics=()",
  "cross-origin-opener-policy": "same-origin",
  ...(options.isHttps ? { "strict-transport-security": "max-age=31536000; includeSubDomains" } : {}),
});
