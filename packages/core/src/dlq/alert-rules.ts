import { AppError } from "@porter/contracts";
import type { ControlDb, ControlTx } from "@porter/db/prisma";
import { writeAuditTx } from "../control-plane/audit";
import type { AlertKind } from "./alert-conditions";

/** An alert rule as the API shows it (snake_case, ids as decimal strings). */
export type AlertRuleView = { id: string; queue_id: string | null; kind: AlertKind; threshold: number; enabled: boolean };

/** An alert with its rule's kind and queue. */
export type AlertView = {
  id: string;
  rule_id: string;
  kind: AlertKind;
  queue_id: string | null;
  subject: string;
  state: "firing" | "resolved";
  value: number;
  message: string;
  fired_at: string;
  resolved_at: string | null;
};

/** What an admin saves: a new rule (no id) or a change to one. */
export type AlertRuleInput = { id?: string | undefined; queue_id: string | null; kind: AlertKind; threshold: number; enabled: boolean };

type RuleRow = { id: bigint; queueId: string | null; kind: string; threshold: number; enabled: boolean };

const viewOf = (r: RuleRow): AlertRuleView => ({
  id: r.id.toString(),
  queue_id: r.queueId,
  kind: r.kind as AlertKind,
  threshold: r.threshold,
  enabled: r.enabled,
});

/** Every alert rule, global ones first, then by queue and kind. */
export const listAlertRules = async (db: ControlDb): Promise<AlertRuleView[]> => {
  const rows = await db.alertRule.findMany({ orderBy: [{ queueId: { sort: "asc", nulls: "first" } }, { kind: "asc" }, { id: "asc" }] });
  return rows.map(viewOf);
};

/**
 * Creates a rule (no `id`) or updates one, audited (`alert_rule.create` / `alert_rule.update`,
 * before and after) in the same transaction. A queue that does not exist is a 404, an unknown rule
 * id too; `group_reopened` needs a window (threshold > 0 seconds), or it could never fire (400).
 * The next evaluation pass applies the change (a disabled rule's firing alerts resolve then).
 */
export const saveAlertRule = async (db: ControlTx, params: { input: AlertRuleInput; actor: string }): Promise<AlertRuleView> => {
  const { input } = params;
  if (input.kind !== "deaths_5m" && input.threshold <= 0) {
    throw new AppError("BAD_REQUEST", { message: `a ${input.kind} rule's threshold is a number of seconds greater than 0` });
  }
  return db.$transaction(async (tx) => {
    if (input.queue_id !== null && !(await tx.queue.findUnique({ where: { id: input.queue_id }, select: { id: true } }))) {
      throw new AppError("NOT_FOUND", { message: `queue ${input.queue_id} not found` });
    }
    const data = { queueId: input.queue_id, kind: input.kind, threshold: input.threshold, enabled: input.enabled };
    if (input.id === undefined) {
      const created = await tx.alertRule.create({ data });
      const view = viewOf(created);
      await writeAuditTx(tx, [{ actor: params.actor, action: "alert_rule.create", objectType: "alert_rule", objectId: view.id, after: view }]);
      return view;
    }
    const id = BigInt(input.id);
    const before = await tx.alertRule.findUnique({ where: { id } });
    if (!before) throw new AppError("NOT_FOUND", { message: `alert rule ${input.id} not found` });
    const updated = await tx.alertRule.update({ where: { id }, data: { ...data, updatedAt: new Date() } });
    const view = viewOf(updated);
    await writeAuditTx(tx, [
      { actor: params.actor, action: "alert_rule.update", objectType: "alert_rule", objectId: view.id, before: viewOf(before), after: view },
    ]);
    return view;
  });
};

/**
 * Deletes a rule and its alerts (their history goes with it; disable a rule to keep it), audited
 * as `alert_rule.delete` with the rule and the number of alerts removed. Unknown id: 404.
 */
export const deleteAlertRule = async (db: ControlTx, params: { id: string; actor: string }): Promise<{ id: string }> =>
  db.$transaction(async (tx) => {
    const id = BigInt(params.id);
    const before = await tx.alertRule.findUnique({ where: { id } });
    if (!before) throw new AppError("NOT_FOUND", { message: `alert rule ${params.id} not found` });
    const alerts = await tx.alert.deleteMany({ where: { ruleId: id } });
    await tx.alertRule.delete({ where: { id } });
    await writeAuditTx(tx, [
      { actor: params.actor, action: "alert_rule.delete", objectType: "alert_rule", objectId: params.id, before: { ...viewOf(before), alerts: alerts.count } },
    ]);
    return { id: params.id };
  });

/**
 * Alerts, newest first (firing and resolved, or one state), a page at a time (offset cursor), with
 * the number firing now (the console's banner).
 */
export const listAlerts = async (
  db: ControlDb,
  params: { state?: "firing" | "resolved" | undefined; cursor?: string | undefined; limit: number },
): Promise<{ alerts: AlertView[]; firing: number; next_cursor: string | null }> => {
  const offset = params.cursor ? Number(params.cursor) : 0;
  const where = params.state ? { state: params.state } : {};
  const [rows, firing] = await Promise.all([
    db.alert.findMany({
      where,
      include: { rule: { select: { kind: true, queueId: true } } },
      orderBy: [{ firedAt: "desc" }, { id: "desc" }],
      skip: offset,
      take: params.limit + 1,
    }),
    db.alert.count({ where: { state: "firing" } }),
  ]);
  const page = rows.slice(0, params.limit);
  return {
    alerts: page.map((a) => ({
      id: a.id.toString(),
      rule_id: a.ruleId.toString(),
      kind: a.rule.kind as AlertKind,
      queue_id: a.rule.queueId,
      subject: a.subject,
      state: a.state as "firing" | "resolved",
      value: a.value,
      message: a.message,
      fired_at: a.firedAt.toISOString(),
      resolved_at: a.resolvedAt?.toISOString() ?? null,
    })),
    firing,
    next_cursor: rows.length > params.limit ? String(offset + params.limit) : null,
  };
};
