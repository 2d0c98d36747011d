// The harness's own virtual network: a bridge with an address in the root namespace (where
// PostgreSQL and PgBouncer listen) and one network namespace per test host, joined to the bridge
// by a veth pair. Everything is named with a fixed prefix, so a run killed without cleanup is
// cleaned at the next start.
import { execFileSync } from "node:child_process";

export const BRIDGE = "pscale0";
export const SUBNET = "10.231.0.0/24";
export const BRIDGE_ADDRESS = "10.231.0.1";
const NS_PREFIX = "porter-scale-h";
const VETH_PREFIX = "pscale-h";

const ip = (...args: string[]): string => execFileSync("ip", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
const ipQuiet = (...args: string[]): void => {
  try {
    ip(...args);
  } catch {
    // already gone
  }
};

/** One test host: a network namespace with one interface on the bridge. */
export type Host = { index: number; ns: string; veth: string; address: string };

export const hostOf = (index: number): Host => ({ index, ns: `${NS_PREFIX}${index}`, veth: `${VETH_PREFIX}${index}`, address: `10.231.0.${10 + index}` });

/** Namespaces of this harness that exist now (a killed run's included). */
const ourNamespaces = (): string[] =>
  ip("netns", "list")
    .split("\n")
    .map((line) => line.split(" ")[0] ?? "")
    .filter((name) => name.startsWith(NS_PREFIX));

/** Removes every namespace, veth and the bridge of this harness, killing what still runs inside the namespaces; returns the namespaces removed. */
export const removeNetwork = (): string[] => {
  const removed = ourNamespaces();
  for (const ns of removed) {
    let pids: string[] = [];
    try {
      pids = ip("netns", "pids", ns).split("\n").filter(Boolean);
    } catch {
      // no pids
    }
    for (const pid of pids) {
      try {
        process.kill(Number(pid), "SIGKILL");
      } catch {
        // exited meanwhile
      }
    }
    ipQuiet("netns", "del", ns);
  }
  for (const line of ip("-o", "link", "show").split("\n")) {
    const name = /^\d+: ([^:@]+)/.exec(line)?.[1];
    if (name?.startsWith(VETH_PREFIX)) ipQuiet("link", "del", name);
  }
  ipQuiet("link", "del", BRIDGE);
  return removed;
};

/** Creates the bridge (BRIDGE_ADDRESS/24) after removing anything a killed run left; returns the stale namespaces removed. */
export const createBridge = (): string[] => {
  const stale = removeNetwork();
  ip("link", "add", BRIDGE, "type", "bridge");
  ip("addr", "add", `${BRIDGE_ADDRESS}/24`, "dev", BRIDGE);
  ip("link", "set", BRIDGE, "up");
  return stale;
};

/** Creates host `index`: its namespace, a veth pair (eth0 inside), its address, lo up. */
export const createHost = (index: number): Host => {
  const host = hostOf(index);
  ip("netns", "add", host.ns);
  ip("link", "add", host.veth, "type", "veth", "peer", "name", "eth0", "netns", host.ns);
  ip("link", "set", host.veth, "master", BRIDGE);
  ip("link", "set", host.veth, "up");
  ip("-n", host.ns, "addr", "add", `${host.address}/24`, "dev", "eth0");
  ip("-n", host.ns, "link", "set", "eth0", "up");
  ip("-n", host.ns, "link", "set", "lo", "up");
  return host;
};

/** Cuts (`down`) or restores (`up`) a host's link on the bridge side. */
export const setLink = (host: Host, state: "up" | "down"): void => {
  ip("link", "set", host.veth, state);
};

/** Whether this process can build namespaces: root and the `ip` tool. */
export const canBuildNetwork = (): string | undefined => {
  if (process.getuid?.() !== 0) return "npm run scale must run as root (it creates network namespaces, veth pairs and a bridge)";
  try {
    ip("-V");
  } catch {
    return "the `ip` tool (iproute2) is missing: apt-get install -y iproute2";
  }
  return undefined;
};
