// Holds the embedded PostgreSQL server for `npm start`, in a process of its own:
//   node --import tsx apps/porter/src/launcher/embedded-holder.ts <dataDir>
// The launcher runs it in its own process group, so a terminal's Ctrl-C does not reach the
// postgres server (which would shut down at once, under workers still draining); the launcher
// stops it last. Protocol: one line `PORTER_EMBEDDED_READY <json>` on stdout once the server
// accepts connections, logs on stderr. SIGTERM/SIGINT: stop the server and exit. End of stdin
// (the launcher died without cleaning up): wait until the other clients (draining workers) have
// disconnected, at most a minute, then stop the server and exit.
import { setTimeout as sleep } from "node:timers/promises";
import { type EmbeddedPostgres, startEmbeddedPostgres } from "@porter/db/embedded";
import pg from "pg";
import { EMBEDDED_READY, type EmbeddedReady } from "./embedded-protocol";

const ORPHAN_WAIT_MS = 60_000;

const main = async (dataDir: string): Promise<void> => {
  let server: EmbeddedPostgres | undefined;
  let stopping: Promise<void> | undefined;
  const stopAndExit = (code: number) =>
    (stopping ??= (async () => {
      try {
        await server?.stop();
      } catch (error) {
        process.stderr.write(`embedded PostgreSQL: stop failed: ${(error as Error).message}\n`);
        code = 1;
      }
      process.exit(code);
    })());
  process.on("SIGTERM", () => void stopAndExit(0));
  process.on("SIGINT", () => void stopAndExit(0));
  // Once the launcher is gone, writing to its pipes fails (EPIPE): keep going regardless.
  for (const stream of [process.stdin, process.stdout, process.stderr]) stream.on("error", () => {});
  process.stdin.on("end", () => {
    process.stderr.write("embedded PostgreSQL: the launcher is gone; stopping once its processes have disconnected\n");
    void waitForClients(server?.connectionString, ORPHAN_WAIT_MS).then(() => stopAndExit(0));
  });
  process.stdin.resume();

  server = await startEmbeddedPostgres({
    dataDir,
    handleSignals: false,
    onLog: (message) => process.stderr.write(message.endsWith("\n") ? message : `${message}\n`),
  });
  const ready: EmbeddedReady = { connectionString: server.connectionString, port: server.port, dataDir: server.dataDir, isOwner: server.isOwner };
  process.stdout.write(`${EMBEDDED_READY}${JSON.stringify(ready)}\n`);
  if (!server.isOwner) process.exit(0);
};

/** Polls until no other client backend is connected (or `timeoutMs`). */
const waitForClients = async (connectionString: string | undefined, timeoutMs: number): Promise<void> => {
  if (!connectionString) return;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const client = new pg.Client({ connectionString, application_name: "porter-embedded-holder" });
    try {
      await client.connect();
      const { rows } = await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`,
      );
      if ((rows[0]?.n ?? 0) === 0) return;
    } catch {
      return;
    } finally {
      await client.end().catch(() => {});
    }
    await sleep(500);
  }
};

const dataDir = process.argv[2];
if (!dataDir) {
  process.stderr.write("usage: embedded-holder.ts <dataDir>\n");
  process.exit(2);
}
main(dataDir).catch((error: unknown) => {
  process.stderr.write(`embedded PostgreSQL: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
