import type { Dirent } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { BUNDLE_DIR } from "./bundles";

// What the console's build depends on, besides apps/console itself.
const PACKAGES = ["api", "contracts", "core", "db", "sdk"];
const SKIP_DIRS = new Set(["node_modules", ".next", BUNDLE_DIR, ".turbo", "generated", "test-results", "playwright-report"]);
const SKIP_FILES = /(^next-env\.d\.ts$|\.test\.tsx?$|\.spec\.tsx?$|\.tsbuildinfo$)/;

/** Newest modification time (ms) of the files under `dir` that can change a build; 0 if none. */
const newestMtime = async (dir: string): Promise<number> => {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  let newest = 0;
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!SKIP_DIRS.has(entry.name)) newest = Math.max(newest, await newestMtime(path));
    } else if (entry.isFile() && !SKIP_FILES.test(entry.name)) {
      newest = Math.max(newest, (await stat(path)).mtimeMs);
    }
  }
  return newest;
};

const mtimeOf = async (path: string): Promise<number> => {
  try {
    return (await stat(path)).mtimeMs;
  } catch {
    return 0;
  }
};

/**
 * Whether `apps/console` needs `next build`: no `.next/BUILD_ID`, or a source it depends on
 * (apps/console, the workspace packages' src and package.json, the Prisma schema, the lockfile)
 * is newer than it. Returns why, or null when the build is current.
 */
export const consoleBuildReason = async (root: string): Promise<string | null> => {
  const buildId = await mtimeOf(join(root, "apps/console/.next/BUILD_ID"));
  if (buildId === 0) return "no build yet";
  const sources = [
    newestMtime(join(root, "apps/console")),
    ...PACKAGES.flatMap((p) => [newestMtime(join(root, "packages", p, "src")), mtimeOf(join(root, "packages", p, "package.json"))]),
    mtimeOf(join(root, "prisma/schema.prisma")),
    mtimeOf(join(root, "package-lock.json")),
  ];
  const newest = Math.max(...(await Promise.all(sources)));
  return newest > buildId ? "sources changed since the last build" : null;
};
