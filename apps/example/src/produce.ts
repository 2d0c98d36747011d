// The example's producer: enqueues work over Porter's HTTP API with the SDK's producer client and
// waits for it to finish. Run it against `npm start` (the key it printed, or .porter/credentials.txt):
//   PORTER_KEY=pk_… npm run -w @porter/example produce
// Environment: PORTER_KEY (required), PORTER_URL (default http://localhost:3000), PORTER_TENANT
// (default tenant_A).
import { randomUUID } from "node:crypto";
import { pathToFileURL } from "node:url";
import { createProducerClient, type ProducerClient } from "@porter/sdk/producer";

/** The jobs one run enqueues: one email (losing its first ack) and three webhooks to one endpoint. */
export const exampleJobs = (tenantId: string, runId: string) => [
  {
    job_type: "email.send",
    tenant_id: tenantId,
    payload: { recipient_ref: `user://${tenantId}/42`, template_ref: "template://welcome", simulate_lost_ack: true },
    idempotency_key: `example-${runId}-welcome-email`,
  },
  // The endpoint takes one delivery a second: at least two of these hear 429 and retry.
  ...[1, 2, 3].map((n) => ({
    job_type: "webhook.deliver",
    tenant_id: tenantId,
    payload: { endpoint_ref: `endpoint://${tenantId}/orders-${runId}`, event_ref: `event://order.created/${n}` },
    idempotency_key: `example-${runId}-webhook-${n}`,
  })),
];

const TERMINAL = new Set(["SUCCEEDED", "DEAD", "CANCELLED", "EXPIRED"]);

/** Enqueues {@link exampleJobs} in one batch (all or none); returns their job ids. */
export const produce = async (client: ProducerClient, tenantId: string, runId: string = randomUUID().slice(0, 8)): Promise<string[]> =>
  (await client.enqueueBatch(exampleJobs(tenantId, runId))).map((r) => r.job_id);

/** Polls the jobs until each is in a terminal state (or `timeoutMs` passes); returns their statuses. */
export const waitUntilFinished = async (client: ProducerClient, jobIds: string[], timeoutMs = 60_000) => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const statuses = await Promise.all(jobIds.map((id) => client.get(id)));
    if (statuses.every((s) => TERMINAL.has(s.status))) return statuses;
    if (Date.now() > deadline) throw new Error(`jobs not finished after ${timeoutMs} ms: ${statuses.map((s) => `${s.job_type} ${s.status}`).join(", ")}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
};

const main = async () => {
  const apiKey = process.env.PORTER_KEY;
  if (!apiKey) {
    console.error("PORTER_KEY is not set: use the producer key npm start printed (or .porter/credentials.txt)");
    process.exit(2);
  }
  const client = createProducerClient({ url: process.env.PORTER_URL ?? "http://localhost:3000", apiKey });
  const jobIds = await produce(client, process.env.PORTER_TENANT ?? "tenant_A");
  console.log(`enqueued ${jobIds.length} jobs; waiting for them to finish…`);
  for (const job of await waitUntilFinished(client, jobIds)) {
    console.log(`${job.job_type.padEnd(16)} ${job.job_id}  ${job.status} after ${job.attempt} attempt(s)  ${JSON.stringify(job.result ?? job.error)}`);
  }
};

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
