import { advanceRedrives, runMaintenance, tryAcquireLeadership, vacuumHotTable } from "@porter/core";
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
};

/**
 * Maintenance under one leader: every worker process tries `tryAcquireLeadership` (a session
 * advisory lock) on a dedicated connection every few seconds; the holder runs `runMaintenance`
 * (rescue expired leases, expire deadlines, promote retries, prune) every second, and vacuums the
 * hot table when enough dead row versions piled up (at most every `vacuumEveryMs`). The lock goes
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

  constructor(private readonly options: MaintenanceLeaderOptions) {
    this.acquireEveryMs = options.acquireEveryMs ?? 5000;
    this.runEveryMs = options.runEveryMs ?? 1000;
    this.vacuumEveryMs = options.vacuumEveryMs ?? 5000;
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
        const report = await runMaintenance(this.client);
        if (Object.values(report).some((n) => n > 0)) this.options.logger.info("maintenance pass", report);
        // Durable redrives (issue 12): one batch per running redrive, at its velocity.
        const { batches } = await advanceRedrives(this.client);
        if (batches.length > 0) this.options.logger.info("redrive batches", { batches });
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
      }
    } catch (error) {
      this.options.logger.warn("maintenance failed; reconnecting", { err: error });
      await this.dropClient();
    }
  }

  private async dropClient(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (this.isLeader) this.options.logger.info("gave up maintenance leadership");
    this.isLeader = false;
    await client?.end().catch(() => undefined);
  }
}
