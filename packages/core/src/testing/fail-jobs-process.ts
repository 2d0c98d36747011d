// A separate process failing jobs to DEAD, for the concurrency test of the failure-group triggers
// (groups.int.test.ts spawns it with tsx): argv = connection string, then a JSON array of
// { id, leaseToken, attempt, message, code } (one failJobs statement per item, as workers ack one
// by one). It connects, prints `ready`, and starts when a line arrives on stdin, so the test can
// release it together with its own connections; the last line is {"failed": n}.
// Test support only; not exported from @porter/core.
import pg from "pg";
import { failJobs } from "../sql/fail-jobs";

const [connectionString, itemsJson] = process.argv.slice(2);
const items = JSON.parse(itemsJson ?? "[]") as Array<{ id: string; leaseToken: string; attempt: number; message: string; code: string }>;
const client = new pg.Client({ connectionString, application_name: "porter-test-fail-process" });
await client.connect();
process.stdout.write("ready\n");
await new Promise<void>((resolve) => process.stdin.once("data", () => resolve()));
process.stdin.pause();
let failed = 0;
for (const item of items) {
  const { applied } = await failJobs(client, [
    {
      id: item.id,
      leaseToken: item.leaseToken,
      attempt: item.attempt,
      outcome: "failed",
      error: {
        code: item.code,
        class: "permanent",
        message: item.message,
        worker_version: "child-1",
        attempt: item.attempt,
        trace_id: "t",
        last_checkpoint: null,
      },
      next: { state: "DEAD" },
    },
  ]);
  failed += applied.length;
}
await client.end();
process.stdout.write(`${JSON.stringify({ failed })}\n`);
