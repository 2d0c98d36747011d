// A redrive runner in a process of its own, for the crash test (dlq/redrive-crash.int.test.ts):
// advances every running redrive in a loop on one connection, as the maintenance leader does,
// until killed. Usage: tsx redrive-loop.ts <connection string> [every ms].
import pg from "pg";
import { advanceRedrives } from "../dlq/redrive-runner";

const [connectionString, everyMs = "20"] = process.argv.slice(2);
const client = new pg.Client({ connectionString, application_name: "porter-test-redrive-loop" });
await client.connect();
process.stdout.write("ready\n");
for (;;) {
  const { batches } = await advanceRedrives(client);
  for (const b of batches) process.stdout.write(`${JSON.stringify(b)}\n`);
  await new Promise((resolve) => setTimeout(resolve, Number(everyMs)));
}
