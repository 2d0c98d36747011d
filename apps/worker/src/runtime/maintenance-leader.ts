import { advanceRedrives, drainWebhookOutbox, evaluateAlerts, hasHousekeepingWork, runMaintenance, tryAcquireLeadership, vacuumHotTable } from "@porter/core";
import pg from "pg";
import type { Logger } from "../logger";
import { jitter } from "./waker";

export type MaintenanceLeaderOptions = {
  connectionString: string;
  logger: Logger;
  /** How often a follower tries to become leader. Default 5 000 ms. */
  acquireEveryMs?: number;
  /** How often the leader runs a maintenance pass. Default 1 000 ms. */
  runEveryMs?: number;
  /** How often at most the leader checks whether the hot table needs a vacuum (`vacuumHotTable`). Default 5 000 ms; 0 = never. */
  vacuumEveryMs?: number;
  /**
   * How often at most the leader runs maintenance's housekeeping (partitions, prunes, the flow
   * rollups' fold, queue samples) while it finds nothing to do; after a pass that did something,
   * the next tick runs it again (each step is batched). Default 10 000 ms. Rescues, expiries,
   * promoted retries, aging and redrives run every tick regardless.
   */
  housekeepingEveryMs?: number;
  /** How often the leader evaluates the DLQ alert rules (`evaluateAlerts`). Default 15 000 ms; 0 = never. */
  alertsEveryMs?: number;
  /** Wakes the live status stream after rescues, expiries and redrive batches (core's StreamNotifier). */
  notifier?: { touch(): void };
};

/**
 * Maintenance under one leader: every worker process tries `tryAcquireLeadership` (a session
 * advisory lock) on a dedicated connection every few seconds; the holder runs `runMaintenance`
 * (rescue expired leases, expire deadlines, promote retries; its housekeeping — prunes, partitions,
 * samples — every `housekeepingEveryMs` while it finds nothing to do) every second, then advances
 * every running durable redrive by one batch at its velocity (`advanceRedrives`), turns the
 * webhook outbox into delivery jobs (`drainWebhookOutbox`), vacuums the
 * hot table when enough dead row versions piled up (at most every `vacuumEveryMs`), and evaluates
 * the DLQ alert rules every `alertsEveryMs` (core's `evaluateAlerts`). The lock goes
 * with the connection, so when the leader exits or its connection drops another worker takes over.
 */
export class MaintenanceLeader {
  private client: pg.Client | undefined;
  private isLeader = false;
  private isClosed = false;
  private nextAcquireAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<void> = Promise.resolve();
  private readonly acquireEveryMs: number;
  private readonly runEveryMs: number;
  private vacuumEveryMs: number;
  private lastVacuumCheckAt = 0;
  private readonly alertsEveryMs: number;
  private lastAlertsAt = 0;
  private lastOutboxWarnAt = 0;
  private readonly housekeepingEveryMs: number;
  private lastHousekeepingAt = 0;
  /** The last housekeeping pass did something: more may be left, run it again next tick. */
  private hasMoreHousekeeping = false;

  constructor(private readonly options: MaintenanceLeaderOptions) {
    this.acquireEveryMs = options.acquireEveryMs ?? 5000;
    this.runEveryMs = options.runEveryMs ?? 1000;
    this.vacuumEveryMs = options.vacuumEveryMs ?? 5000;
    this.alertsEveryMs = options.alertsEveryMs ?? 15_000;
    this.housekeepingEveryMs = options.housekeepingEveryMs ?? 10_000;
  }

  get leading(): boolean {
    return this.isLeader;
  }

  start(): void {
    this.schedule(0);
  }

  /** Stops and closes the connection, which releases leadership. */
  async close(): Promise<void> {
    this.isClosed = true;
    clearTimeout(this.timer);
    await this.current;
    await this.dropClient();
  }

  private schedule(ms: number): void {
    if (this.isClosed) return;
    this.timer = setTimeout(() => {
      this.current = this.tick().finally(() => this.schedule(this.runEveryMs));
    }, ms);
  }

  private async tick(): Promise<void> {
    try {
      if (!this.client) {
        const client = new pg.Client({ connectionString: this.options.connectionString, application_name: "porter-worker-maintenance" });
        client.on("error", (error) => {
          this.options.logger.warn("maintenance connection lost", { err: error });
          if (this.client === client) void this.dropClient();
        });
        await client.connect();
        this.client = client;
      }
      if (!this.isLeader && Date.now() >= this.nextAcquireAt) {
        this.nextAcquireAt = Date.now() + jitter(this.acquireEveryMs, 0.2);
        this.isLeader = await tryAcquireLeadership(this.client);
        if (this.isLeader) this.options.logger.info("became the maintenance leader");
      }
      if (this.isLeader && !this.isClosed) {
        // Housekeeping every tick cost an idle worker ~15 statements a second on the leader's
        // connection, each a round trip and most a commit, beside its claims (docs/performance.md
        // "Issue 15: idle latency (e)"): while it finds nothing it runs every housekeepingEveryMs.
        const housekeeping = this.hasMoreHousekeeping || Date.now() - this.lastHousekeepingAt >= this.housekeepingEveryMs;
        if (housekeeping) this.lastHousekeepingAt = Date.now();
        const report = await runMaintenance(this.client, { notifier: this.options.notifier, housekeeping });
        if (housekeeping) this.hasMoreHousekeeping = hasHousekeepingWork(report);
        // The queue samples are written every minute: on their own they are no news worth a line.
        const { samplesWritten: _sampled, ...changes } = report;
        if (Object.values(changes).some((n) => n > 0)) this.options.logger.info("maintenance pass", report);
        // Durable redrives (issue 12): one batch per running redrive, at its velocity.
        const redrives = await advanceRedrives(this.client);
        if (redrives.batches.length > 0) {
          this.options.notifier?.touch();
          this.options.logger.info("redrive batches", { batches: redrives.batches });
        }
        for (const f of redrives.failed) this.options.logger.warn("a redrive batch failed; retried next tick", { redriveId: f.redrive_id, err: f.error });
        // Tenant webhooks (issue 13): the outbox the finished_jobs trigger fills → webhook.deliver jobs.
        const outbox = await drainWebhookOutbox(this.client);
        if (outbox.enqueued > 0 || outbox.duplicates > 0)
          this.options.logger.info("webhook deliveries enqueued", { enqueued: outbox.enqueued, duplicates: outbox.duplicates });
        // A refusal that lasts (webhook.deliver not registered, a capped tenant) is logged once a minute, not every tick.
        if (outbox.errors.length > 0 && Date.now() - this.lastOutboxWarnAt >= 60_000) {
          this.lastOutboxWarnAt = Date.now();
          this.options.logger.warn("webhook deliveries could not be enqueued; retried every tick", { count: outbox.errors.length, first: outbox.errors[0] });
        }
        if (this.vacuumEveryMs > 0 && Date.now() - this.lastVacuumCheckAt >= this.vacuumEveryMs && !this.isClosed) {
          this.lastVacuumCheckAt = Date.now();
          const vacuum = await vacuumHotTable(this.client);
          if (vacuum.vacuumed) this.options.logger.debug("vacuumed the hot table", vacuum);
          if (!vacuum.isPermitted) {
            // PostgreSQL < 17 has no MAINTAIN privilege for the runtime role: autovacuum alone (tuned on jobs).
            this.vacuumEveryMs = 0;
            this.options.logger.info(
              "the leader's vacuum of the hot table is off: this role may not vacuum jobs (PostgreSQL < 17 has no MAINTAIN privilege); autovacuum handles it",
            );
          }
        }
        if (this.alertsEveryMs > 0 && Date.now() - this.lastAlertsAt >= this.alertsEveryMs && !this.isClosed) {
          this.lastAlertsAt = Date.now();
          await this.evaluateAlerts(this.client);
        }
      }
    } catch (error) {
      this.options.logger.warn("maintenance failed; reconnecting", { err: error });
      await this.dropClient();
    }
  }

  /** One pass of the DLQ alert rules; what changed is logged, and an undeliverable pass once. */
  private async evaluateAlerts(client: pg.Client): Promise<void> {
    const { logger } = this.options;
    let report: Awaited<ReturnType<typeof evaluateAlerts>>;
    try {
      report = await evaluateAlerts(client);
    } catch (error) {
      // Its own transaction was rolled back: maintenance goes on, the next pass tries again.
      logger.warn("dlq alert evaluation failed", { err: error });
      return;
    }
    if (report.fired.length || report.resolved.length) {
      logger.info("dlq alerts changed", { fired: report.fired, resolved: report.resolved, deliveries: report.deliveries });
    }
    if (report.undeliverable > 0) {
      logger.warn("dlq alerts not delivered: the job type webhook.deliver is not registered (the alerts are kept and shown in the console)", {
        transitions: report.undeliverable,
      });
    }
    for (const failure of report.deliveryErrors) logger.warn("dlq alert delivery could not be enqueued", failure);
  }

  private async dropClient(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (this.isLeader) this.options.logger.info("gave up maintenance leadership");
    this.isLeader = false;
    await client?.end().catch(() => undefined);
  }
}
