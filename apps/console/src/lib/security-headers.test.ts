import { describe, expect, it } from "vitest";
import { contentSecurityPolicy, securityHeaders } from "./security-headers";

describe("securityHeaders", () => {
  it("over http: CSP with the nonce, no framing, nosniff, referrer and permissions policies, no HSTS", () => {
    const h = securityHeaders({ nonce: "abc123", isHttps: false });
    expect(h["content-security-policy"]).toContain("script-src 'self' 'nonce-abc123' 'strict-dynamic'");
    expect(h["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(h["content-security-policy"]).toContain("object-src 'none'");
    expect(h["content-security-policy"]).not.toContain("upgrade-insecure-requests");
    expect(h["x-frame-options"]).toBe("DENY");
    expect(h["x-content-type-options"]).toBe("nosniff");
    expect(h["referrer-policy"]).toBe("same-origin");
    expect(h["permissions-policy"]).toContain("camera=()");
    expect(h["strict-transport-security"]).toBeUndefined();
  });

  it("over https: HSTS and upgrade-insecure-requests", () => {
    const h = securityHeaders({ nonce: "n", isHttps: true });
    expect(h["strict-transport-security"]).toMatch(/^max-age=\d{8}/);
    expect(h["content-security-policy"]).toContain("upgrade-insecure-requests");
  });

  it("scripts never get 'unsafe-inline'; 'unsafe-eval' only under next dev", () => {
    const scriptSrc = (csp: string) => csp.split("; ").find((d) => d.startsWith("script-src"))!;
    expect(scriptSrc(contentSecurityPolicy({ nonce: "n", isHttps: false }))).not.toMatch(/unsafe/);
    expect(scriptSrc(contentSecurityPolicy({ nonce: "n", isHttps: false, isDev: true }))).toContain("'unsafe-eval'");
  });

  it("frame-ancestors: 'none' and XFO DENY by default; a status page's allowed origins, and no XFO, when its tenant lists some", () => {
    const none = securityHeaders({ nonce: "n", isHttps: true, frameAncestors: [] });
    expect(none["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(none["x-frame-options"]).toBe("DENY");
    const some = securityHeaders({ nonce: "n", isHttps: true, frameAncestors: ["https://app.example.com", "http://127.0.0.1:4000", "https://*.acme.io"] });
    expect(some["content-security-policy"]).toContain("frame-ancestors https://app.example.com http://127.0.0.1:4000 https://*.acme.io;");
    expect(some["x-frame-options"]).toBeUndefined();
  });

  it("frame-ancestors: a stored origin cannot add a directive or a keyword", () => {
    const csp = contentSecurityPolicy({
      nonce: "n",
      isHttps: false,
      frameAncestors: ["https://a.com; script-src *", "*", "'self'", "https://b.com/path", "https://ok.com", "data:", "https://x.com,https://y.com"],
    });
    const directive = csp.split("; ").find((d) => d.startsWith("frame-ancestors"));
    expect(directive).toBe("frame-ancestors https://ok.com");
    expect(csp.split("; ").filter((d) => d.startsWith("script-src"))).toHaveLength(1);
    // Only invalid entries: 'none', and XFO stays.
    const h = securityHeaders({ nonce: "n", isHttps: false, frameAncestors: ["javascript:alert(1)"] });
    expect(h["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(h["x-frame-options"]).toBe("DENY");
  });
});
