import { spawnSync } from "node:child_process";
import { adminQuery, databaseUrl } from "./database";

export type CommitCeiling = { syncOnTps: number; syncOffTps: number };

const run = (url: string, args: string[], env: Record<string, string> = {}) => {
  const u = new URL(url);
  const out = spawnSync(
    "pgbench",
    [...args, "-h", u.hostname, "-p", u.port || "5432", "-U", decodeURIComponent(u.username || "postgres"), u.pathname.slice(1)],
    {
      encoding: "utf8",
      env: { ...process.env, PGPASSWORD: decodeURIComponent(u.password), ...env },
    },
  );
  if (out.status !== 0) throw new Error(`pgbench failed: ${out.stderr}`);
  return out.stdout;
};

const tps = (output: string) => Number(/tps = ([\d.]+)/.exec(output)?.[1] ?? NaN);

/**
 * The machine's commit ceiling, measured in the same run as the benchmark: pgbench's simple-update
 * script (`-N`) at 8 clients, with synchronous_commit on and off (PGOPTIONS).
 */
export const measureCommitCeiling = async (adminUrl: string, seconds: number): Promise<CommitCeiling> => {
  const name = `porter_bench_pgbench_${Date.now()}`;
  await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
  try {
    const url = databaseUrl(adminUrl, name);
    run(url, ["-i", "-q", "-s", "4"]);
    const common = ["-N", "-c", "8", "-j", "2", "-T", String(seconds)];
    const syncOnTps = tps(run(url, common, { PGOPTIONS: "-c synchronous_commit=on" }));
    const syncOffTps = tps(run(url, common, { PGOPTIONS: "-c synchronous_commit=off" }));
    return { syncOnTps, syncOffTps };
  } finally {
    await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
};
