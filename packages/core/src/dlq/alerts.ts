import type pg from "pg";
import { inOwnTransaction } from "../db";
import { enqueueJobs } from "../sql/enqueue-jobs";
import { type AlertCondition, type AlertKind, readAlertConditions } from "./alert-conditions";

export { type AlertCondition, type AlertKind, GLOBAL_SUBJECT } from "./alert-conditions";

/** The job type that delivers alert notifications (its handler: apps/worker/src/handlers/webhook-deliver.ts). */
export const WEBHOOK_DELIVER_JOB_TYPE = "webhook.deliver";

/** The `endpoint_ref` of a webhook endpoint in a `webhook.deliver` payload. */
export const webhookEndpointRef = (endpointId: string): string => `webhook_endpoint:${endpointId}`;

/** An alert's change of state, as a webhook event (the `event` of a `webhook.deliver` payload). */
export type AlertEvent = {
  /** Stable per alert and state: the `webhook-id` of every delivery attempt. */
  id: string;
  type: "alert.firing" | "alert.resolved";
  timestamp: string;
  data: {
    alert_id: string;
    rule_id: string;
    kind: AlertKind;
    queue_id: string | null;
    subject: string;
    state: "firing" | "resolved";
    value: number;
    threshold: number;
    message: string;
    fired_at: string;
    resolved_at: string | null;
  };
};

/** What one evaluation pass did. */
export type AlertsReport = {
  /** Alerts that started firing in this pass, and those that resolved. */
  fired: string[];
  resolved: string[];
  /** Delivery jobs enqueued (or found already enqueued under their idempotency key). */
  deliveries: number;
  /**
   * Transitions that were not delivered: an enabled alerts endpoint exists but the job type
   * `webhook.deliver` is not in the registry (the alert is kept either way; the console shows it).
   */
  undeliverable: number;
  /** Delivery enqueues that failed (refused by admission, say); the alert is kept. */
  deliveryErrors: Array<{ alertId: string; message: string }>;
};

type AlertRow = {
  id: string;
  rule_id: string;
  subject: string;
  state: "firing" | "resolved";
  value: number;
  message: string;
  fired_at: Date;
  resolved_at: Date | null;
  kind: AlertKind;
  queue_id: string | null;
  threshold: number;
};

/**
 * One evaluation of the alert rules (the maintenance leader runs it every ~15 s): a rule whose
 * condition holds ({@link readAlertConditions}) has one firing alert per subject — created when it
 * starts, its value and message refreshed while it lasts — and a firing alert whose condition no
 * longer holds (or whose rule was disabled) is resolved. Each transition enqueues one
 * `webhook.deliver` job for the enabled alerts endpoint, under the endpoint's tenant and the
 * idempotency key `alert:<id>:<state>`, in the same transaction as the transition, so a crash
 * loses no notification and a re-run never sends one twice. Without an endpoint nothing is
 * enqueued; without the job type in the registry the transitions are counted as `undeliverable`.
 *
 * Runs in a transaction of its own: on a pool, a checked-out connection; on a client (the
 * leader's), BEGIN … COMMIT on it, so the client must not be inside a transaction. Concurrent
 * passes are safe: the unique index on firing (rule, subject) makes the second pass's insert an
 * update of the first's alert. `now` moves the clock for tests (the windows, fired_at, resolved_at).
 */
export const evaluateAlerts = async (db: pg.Pool | pg.PoolClient | pg.Client, params: { now?: Date } = {}): Promise<AlertsReport> =>
  inOwnTransaction(db, async (client) => {
    const now = params.now ?? (await client.query<{ now: Date }>(`SELECT now() AS now`)).rows[0]!.now;
    const conditions = await readAlertConditions(client, now);
    const fired = await upsertFiring(client, conditions, now);
    const resolved = await resolveCleared(client, conditions, now);
    const report: AlertsReport = { fired: fired.map((a) => a.id), resolved: resolved.map((a) => a.id), deliveries: 0, undeliverable: 0, deliveryErrors: [] };
    const transitions = [...fired, ...resolved];
    if (transitions.length === 0) return report;

    // The one alerts endpoint (scope 'alerts'), and whether its job type can be enqueued at all.
    const { rows: endpoints } = await client.query<{ id: string; tenant_id: string; is_registered: boolean }>(
      `SELECT e.id, e.tenant_id, EXISTS (SELECT 1 FROM job_types WHERE id = $1) AS is_registered
         FROM webhook_endpoints e WHERE e.scope = 'alerts' AND e.enabled ORDER BY e.id LIMIT 1`,
      [WEBHOOK_DELIVER_JOB_TYPE],
    );
    const endpoint = endpoints[0];
    if (!endpoint) return report;
    if (!endpoint.is_registered) return { ...report, undeliverable: transitions.length };
    for (const alert of transitions) {
      const event = alertEvent(alert);
      // A savepoint per delivery: a refused enqueue (admission, a paused tenant's cap) costs that
      // notification, never the transitions, which stay visible in the console.
      await client.query("SAVEPOINT porter_alert_delivery");
      try {
        await enqueueJobs(
          client,
          [
            {
              job_type: WEBHOOK_DELIVER_JOB_TYPE,
              tenant_id: endpoint.tenant_id,
              payload: { endpoint_ref: webhookEndpointRef(endpoint.id), event },
              idempotency_key: `alert:${alert.id}:${alert.state}`,
            },
          ],
          // Not at `now`: a test's moved clock must not schedule the delivery in its future.
        );
        await client.query("RELEASE SAVEPOINT porter_alert_delivery");
        report.deliveries++;
      } catch (error) {
        await client.query("ROLLBACK TO SAVEPOINT porter_alert_delivery");
        report.deliveryErrors.push({ alertId: alert.id, message: error instanceof Error ? error.message : String(error) });
      }
    }
    return report;
  });

/**
 * Inserts a firing alert per condition, or refreshes the one firing already (the partial unique
 * index `alerts_firing_key` is the conflict target). `xmax = 0` tells an inserted row from an
 * updated one; only inserted ones are transitions. Returns those, with their rule.
 */
const upsertFiring = async (client: pg.PoolClient | pg.Client, conditions: AlertCondition[], now: Date): Promise<AlertRow[]> => {
  if (conditions.length === 0) return [];
  const { rows } = await client.query<AlertRow & { is_new: boolean }>(
    `WITH input AS (
       SELECT * FROM unnest($1::bigint[], $2::text[], $3::float8[], $4::text[]) AS t(rule_id, subject, value, message)
     ), up AS (
       INSERT INTO alerts AS a (rule_id, subject, state, value, message, fired_at, updated_at)
       SELECT rule_id, subject, 'firing', value, message, $5, $5 FROM input ORDER BY rule_id, subject
       ON CONFLICT (rule_id, subject) WHERE state = 'firing'
       DO UPDATE SET value = EXCLUDED.value, message = EXCLUDED.message, updated_at = EXCLUDED.updated_at
       RETURNING a.*, (xmax = 0) AS is_new
     )
     SELECT up.id::text, up.rule_id::text, up.subject, up.state, up.value, up.message, up.fired_at, up.resolved_at, up.is_new,
            r.kind, r.queue_id, r.threshold
       FROM up JOIN alert_rules r ON r.id = up.rule_id ORDER BY up.id`,
    [conditions.map((c) => c.ruleId), conditions.map((c) => c.subject), conditions.map((c) => c.value), conditions.map((c) => c.message), now],
  );
  return rows.filter((r) => r.is_new);
};

/** Resolves the firing alerts whose (rule, subject) is not among `conditions` (a disabled rule's included). */
const resolveCleared = async (client: pg.PoolClient | pg.Client, conditions: AlertCondition[], now: Date): Promise<AlertRow[]> => {
  const { rows } = await client.query<AlertRow>(
    `WITH up AS (
       UPDATE alerts a SET state = 'resolved', resolved_at = $3, updated_at = $3
        WHERE a.state = 'firing'
          AND NOT EXISTS (SELECT 1 FROM unnest($1::bigint[], $2::text[]) AS t(rule_id, subject) WHERE t.rule_id = a.rule_id AND t.subject = a.subject)
       RETURNING a.*
     )
     SELECT up.id::text, up.rule_id::text, up.subject, up.state, up.value, up.message, up.fired_at, up.resolved_at, r.kind, r.queue_id, r.threshold
       FROM up JOIN alert_rules r ON r.id = up.rule_id ORDER BY up.id`,
    [conditions.map((c) => c.ruleId), conditions.map((c) => c.subject), now],
  );
  return rows;
};

/** The webhook event of an alert's current state; deterministic, so a re-enqueue under the same key matches. */
export const alertEvent = (alert: AlertRow): AlertEvent => {
  const at = alert.state === "firing" ? alert.fired_at : (alert.resolved_at ?? alert.fired_at);
  return {
    id: `alert_${alert.id}_${alert.state}`,
    type: alert.state === "firing" ? "alert.firing" : "alert.resolved",
    timestamp: at.toISOString(),
    data: {
      alert_id: alert.id,
      rule_id: alert.rule_id,
      kind: alert.kind,
      queue_id: alert.queue_id,
      subject: alert.subject,
      state: alert.state,
      value: alert.value,
      threshold: alert.threshold,
      message: alert.message,
      fired_at: alert.fired_at.toISOString(),
      resolved_at: alert.resolved_at?.toISOString() ?? null,
    },
  };
};
