// The harness of the callgrind probes (enqueue-callgrind.ts, claim-callgrind.ts): a migrated
// template data directory on a server of its own, and a count of the instructions a single-user
// backend spends on a script, run on a copy of that template. Needs valgrind; runs as root
// (PostgreSQL as the `postgres` user).
import { execFileSync, spawnSync } from "node:child_process";
import { appendFileSync, chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrate } from "@porter/db/migrator";
import pg from "pg";

const BIN = "/usr/lib/postgresql/15/bin";

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
const asPostgres = (cmd: string, args: string[]) => execFileSync("runuser", ["-u", "postgres", "--", join(BIN, cmd), ...args], { stdio: "pipe" });

/**
 * initdb, a server started on a free port, database `porter` migrated, `seed` run against it, the
 * server stopped: the template's directory (removed when this process exits).
 */
export const migratedTemplate = async (prefix: string, seed: (client: pg.Client) => Promise<void>): Promise<string> => {
  const root = mkdtempSync(join(tmpdir(), `${prefix}-template-`));
  process.on("exit", () => rmSync(root, { recursive: true, force: true }));
  execFileSync("chown", ["postgres", root]);
  const template = join(root, "data");
  asPostgres("initdb", ["-D", template, "-A", "trust", "-U", "postgres"]);
  const port = await freePort();
  appendFileSync(join(template, "postgresql.conf"), `port = ${port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${root}'\n`);
  asPostgres("pg_ctl", ["-D", template, "-w", "-l", join(root, "log"), "start"]);
  const url = `postgres://postgres@127.0.0.1:${port}`;
  const admin = new pg.Client(`${url}/postgres`);
  await admin.connect();
  await admin.query("CREATE DATABASE porter");
  await admin.end();
  await migrate(`${url}/porter`);
  const client = new pg.Client(`${url}/porter`);
  await client.connect();
  await seed(client);
  await client.end();
  asPostgres("pg_ctl", ["-D", template, "-w", "stop"]);
  return template;
};

/**
 * The instructions a single-user backend (`postgres --single -j`) spends on `script` against a copy
 * of `template` (valgrind's callgrind total), with what it printed. KEEP=1 keeps the copy.
 */
export const countInstructions = (name: string, template: string, prefix: string, script: string): { total: number; stdout: string } => {
  const dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
  execFileSync("cp", ["-a", template, join(dir, "data")]);
  writeFileSync(join(dir, "in.sql"), script);
  execFileSync("chown", ["-R", "postgres", dir]);
  chmodSync(dir, 0o755);
  const run = spawnSync(
    "runuser",
    [
      "-u",
      "postgres",
      "--",
      "valgrind",
      "--tool=callgrind",
      `--callgrind-out-file=${join(dir, "cg.out")}`,
      "--trace-children=no",
      join(BIN, "postgres"),
      "--single",
      "-j",
      "-D",
      join(dir, "data"),
      "porter",
    ],
    { input: readFileSync(join(dir, "in.sql")), maxBuffer: 1 << 30 },
  );
  const out = readdirSync(dir).includes("cg.out") ? readFileSync(join(dir, "cg.out"), "utf8") : "";
  const total = /^(?:summary|totals): (\d+)/m.exec(out)?.[1];
  const stdout = run.stdout.toString();
  // A statement's error goes to the server's log (stderr) in single-user mode, and its echo to stdout.
  const errors = `${stdout}\n${run.stderr.toString()}`.match(/ERROR:.*$/gm);
  if (errors) console.log(`${name}: ${errors.slice(0, 3).join(" | ")}`);
  if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true });
  else console.log(`kept ${dir}`);
  if (!total) throw new Error(`${name}: no callgrind total (${run.stderr.toString().slice(-500)})`);
  return { total: Number(total), stdout };
};
