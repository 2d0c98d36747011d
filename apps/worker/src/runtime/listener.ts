import { CANCEL_CHANNEL, READY_CHANNEL } from "@porter/core";
import pg from "pg";
import type { Logger } from "../logger";
import { jitter } from "./waker";

export type ListenerOptions = {
  connectionString: string;
  poolId: string;
  logger: Logger;
  /** A notification: work became ready in this worker's pool. */
  onReady: () => void;
  /**
   * The connection is (re)established and listening: notifications sent while it was not were
   * missed, so catch up with a claim. Once per connection, never part of a burst.
   */
  onConnected: () => void;
  /** A cancel request for the running job with this row id. */
  onCancel: (rowId: string) => void;
};

/**
 * LISTENs on `porter_ready` and `porter_cancel` over a dedicated connection (a pooled one would be
 * handed to other statements). When the connection fails it reconnects with capped exponential
 * backoff; `isConnected` tells the claim loop to poll faster meanwhile, and every (re)connect
 * triggers a claim to catch up on notifications missed while disconnected.
 */
export class NotificationListener {
  private client: pg.Client | undefined;
  private readonly lost = new WeakSet<pg.Client>();
  private isClosed = false;
  private failures = 0;
  private reconnectTimer: NodeJS.Timeout | undefined;
  isConnected = false;

  constructor(private readonly options: ListenerOptions) {}

  start(): void {
    void this.connect();
  }

  async close(): Promise<void> {
    this.isClosed = true;
    clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = undefined;
    this.isConnected = false;
    if (client) {
      this.lost.add(client);
      await client.end().catch(() => undefined);
    }
  }

  private async connect(): Promise<void> {
    if (this.isClosed) return;
    const client = new pg.Client({ connectionString: this.options.connectionString, application_name: "porter-worker-listen" });
    client.on("error", (error) => this.onLost(client, error));
    client.on("end", () => this.onLost(client));
    client.on("notification", (message) => {
      if (message.channel === READY_CHANNEL && message.payload === this.options.poolId) this.options.onReady();
      else if (message.channel === CANCEL_CHANNEL && message.payload) this.options.onCancel(message.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${READY_CHANNEL}; LISTEN ${CANCEL_CHANNEL}`);
    } catch (error) {
      this.onLost(client, error);
      client.end().catch(() => undefined);
      return;
    }
    if (this.isClosed) {
      this.lost.add(client);
      await client.end().catch(() => undefined);
      return;
    }
    if (this.failures > 0) this.options.logger.info("listener reconnected", { after: this.failures });
    this.client = client;
    this.isConnected = true;
    this.failures = 0;
    this.options.onConnected();
  }

  private onLost(client: pg.Client, error?: unknown): void {
    if (this.isClosed || this.lost.has(client)) return;
    this.lost.add(client);
    if (this.client === client) this.client = undefined;
    this.isConnected = false;
    this.failures += 1;
    const delayMs = jitter(Math.min(250 * 2 ** (this.failures - 1), 5000));
    this.options.logger.warn("listener connection lost; reconnecting", { err: error, retryInMs: delayMs });
    this.reconnectTimer = setTimeout(() => void this.connect(), delayMs);
  }
}
