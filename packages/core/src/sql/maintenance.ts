import type pg from "pg";
import { pruneDlq } from "../dlq/prune";
import { pruneStream } from "../stream/log";
import { pruneWebhookDeliveries } from "../webhooks/deliveries";
import { agePriorities } from "./age-priorities";
import { expireJobs } from "./expire-jobs";
import { foldFlowHours, pruneFlow } from "./flow-fold";
import { ensureHistoryPartitions, pruneFinished } from "./prune-finished";
import { pruneQueueSamples, sampleQueues } from "./queue-samples";
import { type RescueOutcome, rescueExpiredLeases } from "./rescue-expired-leases";
import { rescueLostWorkers } from "./rescue-lost-workers";
import { recoverResourceLimits } from "./throttle";
import { pruneWorkers } from "./workers";

/** Advisory-lock key held by the one maintenance leader across all worker processes. */
export const MAINTENANCE_LOCK_KEY = 0x706f7274; // "port"

export type MaintenanceReport = RescueOutcome & {
  /** Of the rescued jobs, those released from lost workers (stale heartbeat row) before their lease ended. */
  fromLostWorkers: number;
  expiredQueued: number;
  promoted: number;
  aged: number;
  limitsRecovered: number;
  pruned: number;
  /** Daily partitions of finished_jobs created ahead of time, and dropped past the retention horizon. */
  partitionsCreated: number;
  partitionsDropped: number;
  workersPruned: number;
  /** Failure-group history pruned: hourly counts (kept 8 days) and death rows (kept 14 days). */
  dlqHoursPruned: number;
  dlqDeathsPruned: number;
  /** Webhook delivery log rows past 14 days. */
  webhookDeliveriesPruned: number;
  /** Status-stream events past retention (core STREAM_RETENTION_MS, one hour). */
  streamPruned: number;
  /** Flow rollups: hours folded from minutes, rows pruned past retention (14 days of minutes, 90 of hours). */
  flowHoursFolded: number;
  flowPruned: number;
  /** Queue samples: rows written for this minute (once a minute), rows pruned past 8 days. */
  samplesWritten: number;
  samplesPruned: number;
};

/**
 * One maintenance pass: release the jobs of lost workers (worker-liveness.ts), rescue expired leases, expire passed deadlines (and promote due retries),
 * age waiting priorities, recover throttled resource keys' limits, create finished_jobs' daily
 * partitions ahead of time and prune finished jobs past retention (whole partitions where it can:
 * prune-finished.ts), forgotten workers and webhook delivery log rows past 14 days; fold the flow rollups' completed hours and prune them; sample every queue's gauges once a minute
 * (queue-samples.ts) and prune the samples. Each step is batched and safe to run
 * concurrently with claims and acks; the leader lock only avoids wasted work.
 *
 * `housekeeping: false` runs only the steps a second matters to — rescues, expiries and promoted
 * retries, priority aging, resource limits recovered — and leaves out partitions, prunes, the fold
 * and the samples (their report fields 0): the leader runs those less often when they find nothing
 * to do (maintenance-leader.ts).
 */
export const runMaintenance = async (
  db: pg.Pool | pg.PoolClient | pg.Client,
  params: { now?: Date; batch?: number; notifier?: { touch(): void }; housekeeping?: boolean } = {},
): Promise<MaintenanceReport> => {
  const lost = await rescueLostWorkers(db, params);
  const leases = await rescueExpiredLeases(db, params);
  const rescue: RescueOutcome = {
    requeued: lost.requeued + leases.requeued,
    dead: lost.dead + leases.dead,
    cancelled: lost.cancelled + leases.cancelled,
    expired: lost.expired + leases.expired,
    notStarted: lost.notStarted + leases.notStarted,
  };
  const fromLostWorkers = lost.requeued + lost.dead + lost.cancelled + lost.expired;
  const expire = await expireJobs(db, params);
  // Rescues and expiries change jobs: wake the status stream's readers (after those commits).
  if (rescue.requeued + rescue.dead + rescue.cancelled + rescue.expired + expire.expired + expire.promoted > 0) params.notifier?.touch();
  const { aged } = await agePriorities(db, params);
  const limitsRecovered = await recoverResourceLimits(db, { now: params.now });
  const housekeeping = params.housekeeping === false ? SKIPPED : await runHousekeeping(db, params);
  return {
    ...rescue,
    fromLostWorkers,
    expiredQueued: expire.expired,
    promoted: expire.promoted,
    aged,
    limitsRecovered,
    ...housekeeping,
  };
};

/** The housekeeping part of a maintenance pass: partitions, prunes, the flow rollups' fold, queue samples. */
export type HousekeepingReport = Pick<
  MaintenanceReport,
  | "pruned"
  | "partitionsCreated"
  | "partitionsDropped"
  | "workersPruned"
  | "dlqHoursPruned"
  | "dlqDeathsPruned"
  | "webhookDeliveriesPruned"
  | "streamPruned"
  | "flowHoursFolded"
  | "flowPruned"
  | "samplesWritten"
  | "samplesPruned"
>;

const SKIPPED: HousekeepingReport = {
  pruned: 0,
  partitionsCreated: 0,
  partitionsDropped: 0,
  workersPruned: 0,
  dlqHoursPruned: 0,
  dlqDeathsPruned: 0,
  webhookDeliveriesPruned: 0,
  streamPruned: 0,
  flowHoursFolded: 0,
  flowPruned: 0,
  samplesWritten: 0,
  samplesPruned: 0,
};

/** True when a housekeeping pass changed anything but its minute's queue sample: more may be left (each step is batched). */
export const hasHousekeepingWork = (report: HousekeepingReport): boolean => Object.entries(report).some(([key, n]) => key !== "samplesWritten" && n > 0);

const runHousekeeping = async (db: pg.Pool | pg.PoolClient | pg.Client, params: { now?: Date; batch?: number }): Promise<HousekeepingReport> => {
  const partitionsCreated = (await ensureHistoryPartitions(db, { now: params.now })).length;
  const prune = await pruneFinished(db, { now: params.now, batch: params.batch ? params.batch * 5 : undefined });
  const workersPruned = await pruneWorkers(db);
  const dlq = await pruneDlq(db, { now: params.now });
  const webhookDeliveriesPruned = await pruneWebhookDeliveries(db, { now: params.now });
  const stream = await pruneStream(db, { now: params.now });
  const flowFold = await foldFlowHours(db, { now: params.now });
  const flowPrune = await pruneFlow(db, { now: params.now });
  const samples = await sampleQueues(db, { now: params.now });
  const samplesPrune = await pruneQueueSamples(db, { now: params.now });
  return {
    pruned: prune.pruned,
    partitionsCreated,
    partitionsDropped: prune.partitionsDropped,
    workersPruned,
    dlqHoursPruned: dlq.hours,
    dlqDeathsPruned: dlq.deaths,
    webhookDeliveriesPruned,
    streamPruned: stream.pruned,
    flowHoursFolded: flowFold.hours,
    flowPruned: flowPrune.pruned,
    samplesWritten: samples.written,
    samplesPruned: samplesPrune.pruned,
  };
};

/**
 * Tries to become the maintenance leader on a dedicated connection (session advisory lock; it is
 * released if that connection drops, so another worker takes over).
 */
export const tryAcquireLeadership = async (client: pg.Client | pg.PoolClient): Promise<boolean> => {
  const { rows } = await client.query<{ ok: boolean }>(`SELECT pg_try_advisory_lock($1) AS ok`, [MAINTENANCE_LOCK_KEY]);
  return rows[0]?.ok === true;
};
