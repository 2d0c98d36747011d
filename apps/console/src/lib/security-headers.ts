// The console's response headers against XSS, clickjacking, sniffing and leaks (proxy.ts sets them
// on every response). Pure, so the policy is unit-tested; the e2e suite checks a served page.

/**
 * The Content-Security-Policy of a response. Next's App Router streams inline scripts (the
 * bootstrap and the RSC payload), so scripts are allowed by a per-request nonce (Next reads it from
 * this same header on the request and puts it on every script it emits) plus `'strict-dynamic'`
 * for the chunks those scripts load — no `'unsafe-inline'` for scripts. Styles allow
 * `'unsafe-inline'`: React and recharts set `style` attributes, which a nonce cannot cover, and a
 * style cannot run code. `frame-ancestors 'none'`: the console is never framed. `'unsafe-eval'`
 * only under `next dev` (React's dev tooling).
 */
export const contentSecurityPolicy = (options: { nonce: string; isHttps: boolean; isDev?: boolean }): string =>
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
    "frame-ancestors 'none'",
    ...(options.isHttps ? ["upgrade-insecure-requests"] : []),
  ].join("; ");

/** Every header proxy.ts adds to a response. HSTS only when served over https. */
export const securityHeaders = (options: { nonce: string; isHttps: boolean; isDev?: boolean }): Record<string, string> => ({
  "content-security-policy": contentSecurityPolicy(options),
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
  "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=(), browsing-topics=()",
  "cross-origin-opener-policy": "same-origin",
  ...(options.isHttps ? { "strict-transport-security": "max-age=31536000; includeSubDomains" } : {}),
});
