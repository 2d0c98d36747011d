// The maintenance leader evaluates the DLQ alert rules on its own timer (issue 12, deliverable 4):
// a real death fires a deaths_5m rule within a pass; with an alerts endpoint but no webhook.deliver
// in the registry, the pass says so once and keeps the alert.
import { Writable } from "node:stream";
import type { TJobError } from "@porter/contracts";
import { claimJobs, enqueueJobs, failJobs, saveAlertRule, setAlertWebhook } from "@porter/core";
import { controlPlane } from "@porter/core/testing/control-plane-factory";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { describe, expect, it } from "vitest";
import { createLogger } from "../logger";
import { waitFor } from "../testing/fixtures";
import { MaintenanceLeader } from "./maintenance-leader";

const db = useTestDatabase();

describe("maintenance leader: DLQ alerts", () => {
  it("fires a rule after a death, as the runtime role; an undeliverable transition is logged once per pass, the alert kept", async () => {
    await controlPlane(db.pool, { pool: "apps", queues: [{ id: "orders", max_attempts: 1, default_max_attempts: 1 }], tenants: ["tenant_A"] });
    const rule = await saveAlertRule(db.appPrisma, { input: { queue_id: "orders", kind: "deaths_5m", threshold: 0, enabled: true }, actor: "test" });
    await setAlertWebhook(db.appPrisma, { url: "https://hooks.example.com/p", tenantId: "tenant_A", enabled: true, rotateSecret: false, actor: "test" });
    const [r] = await enqueueJobs(db.pool, [{ job_type: "orders.job", tenant_id: "tenant_A", payload: { x: 1 }, idempotency_key: "k1" }]);
    const [c] = await claimJobs(db.pool, { poolId: "apps", workerId: "w", limit: 1 });
    expect(c?.jobId).toBe(r!.job_id);
    const error: TJobError = {
      code: "UPSTREAM",
      class: "permanent",
      message: "refused",
      worker_version: "t",
      attempt: 1,
      trace_id: "t",
      last_checkpoint: null,
    };
    await failJobs(db.pool, [{ id: c!.id, leaseToken: c!.leaseToken, attempt: 1, outcome: "failed", error, next: { state: "DEAD" } }]);

    const lines: Array<{ msg: string }> = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) lines.push(JSON.parse(line) as { msg: string });
        done();
      },
    });
    const leader = new MaintenanceLeader({
      connectionString: db.appConnectionString,
      logger: createLogger({ destination }),
      acquireEveryMs: 20,
      runEveryMs: 20,
      alertsEveryMs: 50,
    });
    leader.start();
    try {
      await waitFor(
        "the alert to fire",
        async () => (await db.pool.query(`SELECT 1 FROM alerts WHERE rule_id = $1 AND state = 'firing'`, [rule.id])).rowCount === 1,
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
    } finally {
      await leader.close();
    }
    const messages = lines.map((l) => l.msg);
    expect(messages).not.toContain("maintenance failed; reconnecting");
    expect(messages).not.toContain("dlq alert evaluation failed");
    expect(messages.filter((m) => m === "dlq alerts changed")).toHaveLength(1);
    expect(messages.filter((m) => m.startsWith("dlq alerts not delivered: the job type webhook.deliver is not registered"))).toHaveLength(1);
    expect((await db.pool.query(`SELECT count(*)::int AS n FROM alerts WHERE rule_id = $1`, [rule.id])).rows[0].n).toBe(1);
  });
});
