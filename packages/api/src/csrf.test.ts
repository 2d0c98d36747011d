import { describe, expect, it } from "vitest";
import { refuseCrossSite } from "./csrf";
import { sessionTokenFromCookies } from "./session";

const req = (headers: Record<string, string>, url = "http://console.test:3000/api/trpc/queues.pause") =>
  new Request(url, { method: "POST", headers: { host: "console.test:3000", ...headers } });

describe("refuseCrossSite", () => {
  it("lets a same-origin JSON request through", () => {
    expect(refuseCrossSite(req({ "content-type": "application/json", origin: "http://console.test:3000", "sec-fetch-site": "same-origin" }))).toBeNull();
    expect(refuseCrossSite(req({ "content-type": "application/json; charset=utf-8", origin: "http://console.test:3000" }))).toBeNull();
  });

  it("refuses what a cross-site form or script can send", () => {
    const origin = "http://console.test:3000";
    expect(refuseCrossSite(req({ "content-type": "text/plain", origin }))).toMatch(/application\/json/);
    expect(refuseCrossSite(req({ "content-type": "application/x-www-form-urlencoded", origin }))).toMatch(/application\/json/);
    expect(refuseCrossSite(req({ "content-type": "application/json" }))).toMatch(/Origin header is missing/);
    expect(refuseCrossSite(req({ "content-type": "application/json", origin: "null" }))).toMatch(/missing/);
    expect(refuseCrossSite(req({ "content-type": "application/json", origin: "https://evil.example" }))).toMatch(/evil/);
    expect(refuseCrossSite(req({ "content-type": "application/json", origin: "http://console.test:4000" }))).toMatch(/refused/);
    expect(refuseCrossSite(req({ "content-type": "application/json", origin, "sec-fetch-site": "cross-site" }))).toMatch(/cross-site/);
    expect(refuseCrossSite(req({ "content-type": "application/json", origin, "sec-fetch-site": "same-site" }))).toMatch(/same-site/);
  });

  it("accepts the console's public origin behind a proxy, and only with its scheme", () => {
    const proxied = { "content-type": "application/json", origin: "https://porter.example.com", host: "10.0.0.5:3000" };
    expect(refuseCrossSite(req(proxied, "http://10.0.0.5:3000/api/trpc/x"))).toMatch(/refused/);
    expect(refuseCrossSite(req(proxied, "http://10.0.0.5:3000/api/trpc/x"), ["https://porter.example.com"])).toBeNull();
    expect(
      refuseCrossSite(req({ ...proxied, origin: "http://porter.example.com" }, "http://10.0.0.5:3000/api/trpc/x"), ["https://porter.example.com"]),
    ).toMatch(/refused/);
    expect(refuseCrossSite(req({ ...proxied, "x-forwarded-host": "porter.example.com" }, "http://10.0.0.5:3000/api/trpc/x"))).toBeNull();
  });
});

describe("sessionTokenFromCookies", () => {
  it("reads the cookie, or joins its chunks in order", () => {
    expect(sessionTokenFromCookies("a=1; next-auth.session-token=abc; b=2", "next-auth.session-token")).toBe("abc");
    expect(sessionTokenFromCookies("next-auth.session-token.1=def; next-auth.session-token.0=abc", "next-auth.session-token")).toBe("abcdef");
    expect(sessionTokenFromCookies("other=1", "next-auth.session-token")).toBeNull();
    expect(sessionTokenFromCookies(null, "next-auth.session-token")).toBeNull();
  });
});
