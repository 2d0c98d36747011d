import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isInNetworks, lookupOf, refusedRangeOf, resolveWebhookTarget, unmapAddress, WebhookTargetError } from "./ssrf";

describe("the SSRF guard (pure)", () => {
  it.each([
    ["127.0.0.1", "loopback"],
    ["127.9.9.9", "loopback"],
    ["10.1.2.3", "private (RFC 1918)"],
    ["172.16.0.1", "private (RFC 1918)"],
    ["172.31.255.255", "private (RFC 1918)"],
    ["192.168.1.1", "private (RFC 1918)"],
    ["169.254.169.254", "link-local (cloud metadata)"],
    ["100.64.0.1", "carrier-grade NAT (RFC 6598)"],
    ["0.0.0.0", "unspecified"],
    ["224.0.0.1", "multicast"],
    ["::1", "loopback"],
    ["::", "unspecified"],
    ["fc00::1", "unique local (private)"],
    ["fd12:3456::1", "unique local (private)"],
    ["fe80::1", "link-local"],
    ["ff02::1", "multicast"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["::ffff:169.254.169.254", "link-local (cloud metadata)"],
    ["0:0:0:0:0:ffff:a00:1", "private (RFC 1918)"],
  ])("refuses %s (%s)", (address, why) => {
    expect(refusedRangeOf(address)).toBe(why);
  });

  it.each(["8.8.8.8", "172.32.0.1", "100.128.0.1", "203.0.113.7", "2606:4700::1111", "::ffff:8.8.8.8"])("lets %s through", (address) => {
    expect(refusedRangeOf(address)).toBeNull();
  });

  it("an IPv4 address and its IPv4-mapped IPv6 forms are judged alike", () => {
    fc.assert(
      fc.property(fc.ipV4(), (v4) => {
        const [a, b, c, d] = v4.split(".").map(Number) as [number, number, number, number];
        const hex = `::ffff:${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
        expect(unmapAddress(`::ffff:${v4}`)).toBe(v4);
        expect(refusedRangeOf(`::ffff:${v4}`)).toBe(refusedRangeOf(v4));
        expect(refusedRangeOf(hex)).toBe(refusedRangeOf(v4));
      }),
    );
  });

  it("an allow-listed network lets its addresses through, and only those", async () => {
    expect(isInNetworks("127.0.0.1", ["127.0.0.1/32"])).toBe(true);
    expect(isInNetworks("::ffff:127.0.0.1", ["127.0.0.1/32"])).toBe(true);
    expect(isInNetworks("127.0.0.2", ["127.0.0.1/32"])).toBe(false);
    expect(isInNetworks("::1", ["127.0.0.1/32"])).toBe(false);
    expect(isInNetworks("::1", ["::1/128"])).toBe(true);
    expect(isInNetworks("10.9.8.7", ["10.0.0.0/8"])).toBe(true);
    await expect(resolveWebhookTarget("https://127.0.0.1/x", [])).rejects.toThrow(WebhookTargetError);
    await expect(resolveWebhookTarget("https://127.0.0.1/x", ["127.0.0.1/32"])).resolves.toMatchObject({ addresses: [{ address: "127.0.0.1", family: 4 }] });
  });

  it("checks every address a name resolves to, and the lookup it hands to the socket answers with those only", async () => {
    const rebinding = async () => [
      { address: "203.0.113.7", family: 4 },
      { address: "10.0.0.1", family: 4 },
    ];
    await expect(resolveWebhookTarget("https://hooks.example.test/x", [], { lookup: rebinding })).rejects.toThrow(/resolves to 10\.0\.0\.1, a private/);
    const target = await resolveWebhookTarget("https://hooks.example.test/x", [], { lookup: async () => [{ address: "203.0.113.7", family: 4 }] });
    const lookup = lookupOf(target);
    const one = await new Promise((resolve) => lookup("hooks.example.test", {}, (_e, address, family) => resolve([address, family])));
    expect(one).toEqual(["203.0.113.7", 4]);
    const all = await new Promise((resolve) => lookup("hooks.example.test", { all: true }, (_e, address) => resolve(address)));
    expect(all).toEqual([{ address: "203.0.113.7", family: 4 }]);
  });

  it("refuses non-https URLs and credentials in the URL; an unresolvable host only when asked to", async () => {
    await expect(resolveWebhookTarget("http://203.0.113.7/", [])).rejects.toThrow(/https/);
    await expect(resolveWebhookTarget("https://u:p@203.0.113.7/", [])).rejects.toThrow(/credentials/);
    const failing = async () => {
      throw Object.assign(new Error("getaddrinfo ENOTFOUND"), { code: "ENOTFOUND" });
    };
    await expect(resolveWebhookTarget("https://nowhere.test/", [], { lookup: failing })).rejects.toThrow(/does not resolve/);
    await expect(resolveWebhookTarget("https://nowhere.test/", [], { lookup: failing, isUnresolvedAllowed: true })).resolves.toMatchObject({ addresses: [] });
  });
});
