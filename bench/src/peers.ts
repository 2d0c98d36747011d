import { spawnSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The peers the benchmark compares against (graphile-worker, pg-boss) are not dependencies of the
 * workspace: they declare Node ≥ 22, so a plain `npm install` would warn about them to everyone.
 * They live in bench/.peers (its own package.json and lockfile), installed here with
 * `npm ci --prefix bench/.peers` when missing, and linked into bench/node_modules so the bench's
 * sources import them by name. `npm run bench` and bench's typecheck run this first.
 */
const BENCH = fileURLToPath(new URL("..", import.meta.url));
const PEERS = join(BENCH, ".peers");
const LINKED = ["graphile-worker", "pg-boss"] as const;

const wanted = (): Record<string, string> => JSON.parse(readFileSync(join(PEERS, "package.json"), "utf8")).dependencies;
const installedVersion = (dir: string): string | undefined => {
  const manifest = join(dir, "package.json");
  return existsSync(manifest) ? JSON.parse(readFileSync(manifest, "utf8")).version : undefined;
};

const install = (deps: Record<string, string>): void => {
  const names = LINKED.map((name) => `${name} ${deps[name]}`).join(", ");
  process.stderr.write(`bench: installing the peers (${names}) into bench/.peers: npm ci --prefix bench/.peers\n`);
  process.stderr.write("bench: they declare Node ≥ 22 and run on Node 20 (engine warnings silenced here; see bench/README.md)\n");
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const args = ["ci", "--prefix", PEERS, "--no-audit", "--no-fund", "--loglevel=error", "--engine-strict=false"];
  const run = spawnSync(npm, args, { stdio: ["ignore", 2, 2], shell: process.platform === "win32" });
  if (run.status !== 0) throw new Error(`installing the bench's peers failed (exit ${run.status ?? run.signal}); run: npm ci --prefix bench/.peers`);
};

const link = (name: string): void => {
  const target = join(PEERS, "node_modules", name);
  const at = join(BENCH, "node_modules", name);
  if (existsSync(at) && installedVersion(at) === installedVersion(target)) return;
  if (existsSync(at) || isLink(at)) rmSync(at, { recursive: true, force: true });
  mkdirSync(dirname(at), { recursive: true });
  symlinkSync(relative(dirname(at), target), at, "junction");
};
const isLink = (path: string): boolean => {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
};

export const ensurePeers = (): void => {
  const deps = wanted();
  const missing = Object.entries(deps).some(([name, version]) => installedVersion(join(PEERS, "node_modules", name)) !== version);
  if (missing) install(deps);
  for (const name of LINKED) link(name);
};

ensurePeers();
