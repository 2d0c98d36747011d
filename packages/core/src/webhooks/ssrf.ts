// The SSRF guard of every webhook (tenant and alerts), one home: a webhook URL's host is resolved
// and each address it resolves to must be public, unless it lies inside an allow-listed network
// (webhook_allowed_networks, admins only). Checked when an endpoint is saved (a 400 that names the
// address) and again at delivery time, where the request connects to the checked addresses only
// (the handler passes `lookupOf(target)` to https.request), so a DNS answer that changes between
// the check and the connect (rebinding) cannot reach anything else.
import dns from "node:dns/promises";
import net from "node:net";
import { AppError } from "@porter/contracts";
import type { ControlTx } from "@porter/db/prisma";
import type { Db } from "../db";

/** Ranges no webhook may reach unless allow-listed: [network, prefix, why]. */
const REFUSED_V4: ReadonlyArray<readonly [string, number, string]> = [
  ["0.0.0.0", 8, "unspecified"],
  ["10.0.0.0", 8, "private (RFC 1918)"],
  ["100.64.0.0", 10, "carrier-grade NAT (RFC 6598)"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local (cloud metadata)"],
  ["172.16.0.0", 12, "private (RFC 1918)"],
  ["192.0.0.0", 24, "IETF protocol assignments"],
  ["192.168.0.0", 16, "private (RFC 1918)"],
  ["198.18.0.0", 15, "benchmarking"],
  ["224.0.0.0", 4, "multicast"],
  ["240.0.0.0", 4, "reserved"],
];
const REFUSED_V6: ReadonlyArray<readonly [string, number, string]> = [
  ["::", 128, "unspecified"],
  ["::1", 128, "loopback"],
  ["64:ff9b::", 96, "NAT64"],
  ["fc00::", 7, "unique local (private)"],
  ["fe80::", 10, "link-local"],
  ["ff00::", 8, "multicast"],
];

/** An IPv4-mapped IPv6 address (`::ffff:127.0.0.1`, `::ffff:7f00:1`) as its IPv4 address; others unchanged. */
export const unmapAddress = (address: string): string => {
  const lower = address.toLowerCase();
  if (!net.isIPv6(lower)) return address;
  const dotted = /^(?:0{0,4}:){0,5}:?ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower) ?? /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted && net.isIPv4(dotted[1]!)) return dotted[1]!;
  const hex = /^(?:0{0,4}:){0,5}:?ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex) {
    const hi = Number.parseInt(hex[1]!, 16);
    const lo = Number.parseInt(hex[2]!, 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return address;
};

/** Why an address is refused ("loopback", "private (RFC 1918)"…), or null for a public address. Pure. */
export const refusedRangeOf = (address: string): string | null => {
  const a = unmapAddress(address);
  const family = net.isIPv4(a) ? "ipv4" : net.isIPv6(a) ? "ipv6" : null;
  if (!family) return "not an IP address";
  for (const [network, prefix, why] of family === "ipv4" ? REFUSED_V4 : REFUSED_V6) {
    const list = new net.BlockList();
    list.addSubnet(network, prefix, family);
    if (list.check(a, family)) return why;
  }
  return null;
};

/** Whether `address` lies in one of the `cidrs` (`10.0.0.0/8`, `::1/128`). Pure. */
export const isInNetworks = (address: string, cidrs: readonly string[]): boolean => {
  const a = unmapAddress(address);
  const family = net.isIPv4(a) ? "ipv4" : "ipv6";
  const list = new net.BlockList();
  for (const cidr of cidrs) {
    const [network, prefix] = cidr.split("/");
    const netFamily = net.isIPv4(network!) ? "ipv4" : "ipv6";
    if (netFamily !== family) continue;
    list.addSubnet(network!, Number(prefix ?? (family === "ipv4" ? 32 : 128)), family);
  }
  return list.check(a, family);
};

/** The allow-listed networks (`cidr` text), read on any connection (pool, client, or the runtime role). */
export const readAllowedNetworks = async (db: Db): Promise<string[]> =>
  (await db.query<{ cidr: string }>(`SELECT cidr::text AS cidr FROM webhook_allowed_networks`)).rows.map((r) => r.cidr);

/** A checked webhook target: the URL and the addresses its host resolved to, each permitted. */
export type WebhookTarget = { url: URL; addresses: Array<{ address: string; family: 4 | 6 }> };

/** A refused target: `message` says which address and why (no path or query of the URL). */
export class WebhookTargetError extends Error {
  override name = "WebhookTargetError";
}

/**
 * Resolves a webhook URL's host and checks every address it resolves to: refused when one is
 * loopback, private, link-local, CGNAT, unspecified, multicast or reserved (IPv4-mapped IPv6
 * included) and not inside an allow-listed network. https only. Throws a WebhookTargetError
 * naming the host and the address; returns the addresses to connect to.
 */
export const resolveWebhookTarget = async (
  rawUrl: string,
  allowed: readonly string[],
  options: {
    lookup?: (host: string) => Promise<Array<{ address: string; family: number }>>;
    /** A host that does not resolve passes with no addresses (saving an endpoint; delivery checks again). */
    isUnresolvedAllowed?: boolean;
  } = {},
): Promise<WebhookTarget> => {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    throw new WebhookTargetError("the webhook URL is not a valid URL");
  }
  if (url.protocol !== "https:") throw new WebhookTargetError("a webhook URL must be https://");
  if (url.username || url.password) throw new WebhookTargetError("a webhook URL must not carry credentials");
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  let resolved: Array<{ address: string; family: number }>;
  if (net.isIP(host)) resolved = [{ address: host, family: net.isIP(host) }];
  else {
    try {
      resolved = await (options.lookup ?? ((h: string) => dns.lookup(h, { all: true, verbatim: true })))(host);
    } catch (error) {
      if (options.isUnresolvedAllowed) return { url, addresses: [] };
      throw new WebhookTargetError(`the webhook host ${host} does not resolve (${error instanceof Error ? error.message : String(error)})`);
    }
  }
  if (resolved.length === 0 && options.isUnresolvedAllowed) return { url, addresses: [] };
  if (resolved.length === 0) throw new WebhookTargetError(`the webhook host ${host} does not resolve`);
  for (const { address } of resolved) {
    const why = refusedRangeOf(address);
    if (why && !isInNetworks(address, allowed)) {
      throw new WebhookTargetError(
        `the webhook host ${host} resolves to ${address}, a ${why} address; an admin may allow its network (porter webhooks allow <cidr>)`,
      );
    }
  }
  return { url, addresses: resolved.map((r) => ({ address: r.address, family: r.family === 6 ? 6 : 4 })) };
};

/** The allow-listed networks, read through Prisma (the control plane's transactions). */
export const readAllowedNetworksTx = async (tx: ControlTx): Promise<string[]> =>
  (await tx.$queryRaw<Array<{ cidr: string }>>`SELECT cidr::text AS cidr FROM webhook_allowed_networks`).map((r) => r.cidr);

/**
 * The same check as an AppError 400, for saving an endpoint (console, API, CLI). A host that does
 * not resolve yet is accepted (a name set up before its DNS record): every delivery checks again,
 * and an unresolvable host there is a retried network error.
 */
export const assertWebhookUrl = async (tx: ControlTx, rawUrl: string): Promise<WebhookTarget> => {
  try {
    return await resolveWebhookTarget(rawUrl, await readAllowedNetworksTx(tx), { isUnresolvedAllowed: true });
  } catch (error) {
    if (error instanceof WebhookTargetError) throw new AppError("BAD_REQUEST", { message: error.message });
    throw error;
  }
};

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | Array<{ address: string; family: number }>, family?: number) => void;

/**
 * A `lookup` for https.request/net.connect that answers with the checked addresses only (never a
 * second DNS query): the connection goes where the guard looked.
 */
export const lookupOf =
  (target: WebhookTarget) =>
  (_host: string, options: { all?: boolean } | number | LookupCallback, callback?: LookupCallback): void => {
    const cb = (typeof options === "function" ? options : callback) as LookupCallback;
    const all = typeof options === "object" && options !== null && options.all === true;
    if (all) cb(null, target.addresses);
    else cb(null, target.addresses[0]!.address, target.addresses[0]!.family);
  };
