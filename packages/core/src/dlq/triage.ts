import { AppError } from "@porter/contracts";
import type { ControlTx, Prisma } from "@porter/db/prisma";
import { writeAuditTx } from "../control-plane/audit";
import { checkGroupId, type DlqEventView, type DlqOwner, type DlqStatus } from "./reads";

/** Ignored until a date, or until N more deaths arrive. */
export type DlqIgnore = { until: string | Date } | { more: number };

/** A triage change of a failure group; absent fields stay as they are, `null` clears. */
export type GroupTriage = {
  id: string;
  /** A console user's id or e-mail, "me" (needs `callerUserId`), or null to unassign. */
  owner?: string | null;
  status?: DlqStatus;
  /** Required with status "ignored", refused otherwise. */
  ignore?: DlqIgnore;
  reason_code?: string | null;
  note?: string;
  /** The audit actor (`user:<email>`, `cli:<name>`). */
  actor: string;
  /** The caller's user id, for owner "me". */
  callerUserId?: string | null;
};

/** A triage change of a single dead job (no ignore: a job does not die again until redriven). */
export type JobTriage = Omit<GroupTriage, "id" | "ignore"> & { job_id: string };

/** A dead job's own triage and thread (the API's ZJobTriage). */
export type JobTriageView = {
  job_id: string;
  /** The failure group it last died into (its newest dlq_deaths row), null when none is kept. */
  group_id: string | null;
  owner: DlqOwner | null;
  status: DlqStatus;
  reason_code: string | null;
  events: DlqEventView[];
};

/** One reason code of the operator-defined list. */
export type ReasonCode = { code: string; label: string; description: string; archived: boolean };

const bad = (message: string) => new AppError("BAD_REQUEST", { message });
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The user an owner reference names: "me" (the caller), a user id or an e-mail; unknown or disabled → 400. */
const resolveOwner = async (tx: ControlTx, owner: string, callerUserId: string | null | undefined): Promise<DlqOwner> => {
  const ref = owner === "me" ? callerUserId : owner;
  if (!ref) throw bad('owner "me" needs a signed-in console user; give an e-mail instead');
  const user = await tx.user.findFirst({
    where: ref.includes("@") ? { email: { equals: ref, mode: "insensitive" } } : { id: ref },
    select: { id: true, email: true, name: true, disabledAt: true },
  });
  if (!user) throw bad(`no console user ${JSON.stringify(ref)}`);
  if (user.disabledAt) throw bad(`console user ${user.email} is disabled`);
  return { id: user.id, email: user.email, name: user.name };
};

/** A reason code that may be set: known and not archived (keeping an archived one already set is fine). */
const checkReason = async (tx: ControlTx, code: string, current: string | null): Promise<void> => {
  const row = await tx.dlqReasonCode.findUnique({ where: { code }, select: { archived: true } });
  if (!row) throw bad(`unknown reason code ${JSON.stringify(code)} (see dlq.reasonCodes.list)`);
  if (row.archived && code !== current) throw bad(`reason code ${code} is archived`);
};

type EventInput = { kind: string; body: string | null; data: Record<string, unknown> };

/** The owner, status and reason parts of a change, as thread events and audit before/after. */
const diff = async (
  tx: ControlTx,
  current: { owner_id: string | null; owner_email: string | null; status: DlqStatus; reason_code: string | null },
  change: Omit<JobTriage, "job_id" | "actor">,
) => {
  const events: EventInput[] = [];
  const before: Record<string, unknown> = {};
  const after: Record<string, unknown> = {};
  const data: { ownerId?: string | null; status?: DlqStatus; reasonCode?: string | null } = {};
  if (change.owner !== undefined) {
    const owner = change.owner === null ? null : await resolveOwner(tx, change.owner, change.callerUserId);
    if ((owner?.id ?? null) !== current.owner_id) {
      data.ownerId = owner?.id ?? null;
      before.owner = current.owner_email;
      after.owner = owner?.email ?? null;
      events.push({
        kind: "assigned",
        body: owner ? `assigned to ${owner.email}` : "unassigned",
        data: { from: current.owner_email, to: owner?.email ?? null },
      });
    }
  }
  if (change.reason_code !== undefined && change.reason_code !== current.reason_code) {
    if (change.reason_code !== null) await checkReason(tx, change.reason_code, current.reason_code);
    data.reasonCode = change.reason_code;
    before.reason_code = current.reason_code;
    after.reason_code = change.reason_code;
    events.push({
      kind: "reason",
      body: change.reason_code ? `reason ${change.reason_code}` : "reason cleared",
      data: { from: current.reason_code, to: change.reason_code },
    });
  }
  if (change.status !== undefined && change.status !== current.status) {
    data.status = change.status;
    before.status = current.status;
    after.status = change.status;
  }
  return { events, before, after, data };
};

const appendEvents = async (tx: ControlTx, target: { groupId?: bigint; jobId?: string }, actor: string, events: EventInput[]) => {
  if (events.length === 0) return;
  await tx.dlqEvent.createMany({
    data: events.map((e) => ({
      ...(target.groupId !== undefined ? { groupId: target.groupId } : {}),
      ...(target.jobId !== undefined ? { jobId: target.jobId } : {}),
      actor,
      kind: e.kind,
      body: e.body,
      data: e.data as Prisma.InputJsonValue,
    })),
  });
};

/**
 * Triages a failure group in one transaction: owner, status (with its ignore), reason code and a
 * note, each change appended to the group's thread (dlq_events: assigned, status, reason, note)
 * and the whole change audited as one `dlq.group.triage` row. The group row is locked first
 * (FOR UPDATE), so a death arriving meanwhile — the trigger's upsert of the same row — waits and
 * then sees the new status (a resolve followed by a death reopens it). Setting `resolved` or
 * `ignored` clears the regression flag (the next reopen sets it again). Unknown group → 404;
 * unknown or disabled user, unknown or archived reason code, an ignore date not in the future,
 * an ignore without status "ignored" → 400, and nothing changes.
 */
export const triageGroup = async (db: ControlTx, params: GroupTriage): Promise<void> => {
  const id = checkGroupId(params.id);
  if ((params.status === "ignored") !== (params.ignore !== undefined)) throw bad('status "ignored" takes ignore ({until} or {more}), and only it does');
  await db.$transaction(async (tx) => {
    // Prisma has no FOR UPDATE: the lock and the database's clock are one raw statement.
    const rows = await tx.$queryRaw<
      Array<{
        id: bigint;
        owner_id: string | null;
        owner_email: string | null;
        status: DlqStatus;
        reason_code: string | null;
        ignored_until: Date | null;
        ignore_remaining: number | null;
        now: Date;
      }>
    >`SELECT g.id, g.owner_id, u.email AS owner_email, g.status::text AS status, g.reason_code, g.ignored_until, g.ignore_remaining, now() AS now
        FROM dlq_groups g LEFT JOIN users u ON u.id = g.owner_id WHERE g.id = ${id}::bigint FOR UPDATE OF g`;
    const current = rows[0];
    if (!current) throw new AppError("NOT_FOUND", { message: `failure group ${id} not found` });
    const { events, before, after, data } = await diff(tx, current, params);
    const update: Prisma.DlqGroupUncheckedUpdateInput = { ...data };
    if (params.status !== undefined) {
      let ignoredUntil: Date | null = null;
      let ignoreRemaining: number | null = null;
      if (params.ignore) {
        if ("until" in params.ignore) {
          ignoredUntil = new Date(params.ignore.until);
          if (!(ignoredUntil.getTime() > current.now.getTime())) throw bad("ignore until must be a time in the future");
        } else {
          if (!Number.isInteger(params.ignore.more) || params.ignore.more < 1) throw bad("ignore more must be a positive integer");
          ignoreRemaining = params.ignore.more;
        }
      }
      const isIgnoreChanged = ignoredUntil?.getTime() !== current.ignored_until?.getTime() || ignoreRemaining !== current.ignore_remaining;
      if (params.status !== current.status || isIgnoreChanged) {
        Object.assign(update, { status: params.status, ignoredUntil, ignoreRemaining, statusChangedAt: current.now });
        if (params.status === "resolved" || params.status === "ignored") update.isRegression = false;
        const ignore = ignoredUntil ? { until: ignoredUntil.toISOString() } : ignoreRemaining ? { more: ignoreRemaining } : null;
        before.status = current.status;
        after.status = params.status;
        if (ignore) after.ignore = ignore;
        events.push({
          kind: "status",
          body: `${current.status} → ${params.status}${ignore ? ("until" in ignore ? ` until ${ignore.until}` : ` for ${ignore.more} more`) : ""}`,
          data: { from: current.status, to: params.status, ...(ignore ? { ignore } : {}) },
        });
      }
    }
    if (params.note) events.push({ kind: "note", body: params.note, data: {} });
    if (events.length === 0) return;
    if (Object.keys(update).length > 0) await tx.dlqGroup.update({ where: { id: current.id }, data: { ...update, updatedAt: current.now } });
    await appendEvents(tx, { groupId: current.id }, params.actor, events);
    await writeAuditTx(tx, [
      {
        actor: params.actor,
        action: "dlq.group.triage",
        objectType: "dlq_group",
        objectId: id,
        before,
        after: { ...after, ...(params.note ? { note: params.note } : {}) },
        reason: params.note ?? null,
      },
    ]);
  });
};

const eventView = (e: {
  id: bigint;
  at: Date;
  actor: string;
  kind: string;
  body: string | null;
  data: Prisma.JsonValue;
  jobId: string | null;
}): DlqEventView => ({
  id: String(e.id),
  at: e.at.toISOString(),
  actor: e.actor,
  kind: e.kind,
  body: e.body,
  data: (e.data ?? null) as Record<string, unknown> | null,
  job_id: e.jobId,
});

/** A dead job's own triage and thread (status `new`, no owner, when it has none yet). */
export const getJobTriage = async (db: ControlTx, jobId: string): Promise<JobTriageView> => {
  const [row, events, deaths] = await Promise.all([
    db.dlqJobTriage.findUnique({ where: { jobId }, include: { owner: { select: { id: true, email: true, name: true } } } }),
    db.dlqEvent.findMany({ where: { jobId, groupId: null }, orderBy: { id: "asc" }, take: 1000 }),
    // Data plane (the deaths the triggers keep): the newest death names the job's group.
    db.$queryRaw<Array<{ group_id: string }>>`
      SELECT group_id::text AS group_id FROM dlq_deaths WHERE job_id = ${jobId}::uuid ORDER BY died_at DESC, id DESC LIMIT 1`,
  ]);
  return {
    job_id: jobId,
    group_id: deaths[0]?.group_id ?? null,
    owner: row?.owner ?? null,
    status: row?.status ?? "new",
    reason_code: row?.reasonCode ?? null,
    events: events.map(eventView),
  };
};

/**
 * One job's triage for a reader (`dlq.jobs.get`): 404 unless the job is DEAD now, died in the last
 * 14 days (a dlq_deaths row) or was triaged on its own before (so a redriven job keeps its thread).
 */
export const readJobTriage = async (db: ControlTx, jobIdInput: string): Promise<JobTriageView> => {
  if (!UUID.test(jobIdInput)) throw bad("job_id must be a uuid");
  const jobId = jobIdInput.toLowerCase();
  // One round trip over the three places a dead job leaves a trace; any one is enough.
  const known = await db.$queryRaw<Array<{ ok: number }>>`
    SELECT 1 AS ok FROM finished_jobs WHERE job_id = ${jobId}::uuid AND state = 'DEAD'
    UNION ALL SELECT 1 FROM dlq_deaths WHERE job_id = ${jobId}::uuid
    UNION ALL SELECT 1 FROM dlq_job_triage WHERE job_id = ${jobId}::uuid LIMIT 1`;
  if (known.length === 0) throw new AppError("NOT_FOUND", { message: `no dead job ${jobId}` });
  return getJobTriage(db, jobId);
};

/**
 * Triages one dead job on its own (dlq_job_triage), for the job in a group that needs its own
 * owner or status: same rules, thread (dlq_events with job_id, no group) and audit
 * (`dlq.job.triage`) as {@link triageGroup}. The job must be DEAD now or have died in the last
 * 14 days (a dlq_deaths row); otherwise 404.
 */
export const triageJob = async (db: ControlTx, params: JobTriage): Promise<JobTriageView> => {
  if (!UUID.test(params.job_id)) throw bad("job_id must be a uuid");
  const jobId = params.job_id.toLowerCase();
  await db.$transaction(async (tx) => {
    const died = await tx.$queryRaw<Array<{ ok: number }>>`
      SELECT 1 AS ok FROM finished_jobs WHERE job_id = ${jobId}::uuid AND state = 'DEAD'
      UNION ALL SELECT 1 FROM dlq_deaths WHERE job_id = ${jobId}::uuid LIMIT 1`;
    if (died.length === 0) throw new AppError("NOT_FOUND", { message: `no dead job ${jobId}` });
    // The row's lock: insert it if absent, then lock it, so concurrent triages of one job serialize.
    await tx.$executeRaw`INSERT INTO dlq_job_triage (job_id) VALUES (${jobId}::uuid) ON CONFLICT DO NOTHING`;
    const rows = await tx.$queryRaw<Array<{ owner_id: string | null; owner_email: string | null; status: DlqStatus; reason_code: string | null; now: Date }>>`
      SELECT t.owner_id, u.email AS owner_email, t.status::text AS status, t.reason_code, now() AS now
        FROM dlq_job_triage t LEFT JOIN users u ON u.id = t.owner_id WHERE t.job_id = ${jobId}::uuid FOR UPDATE OF t`;
    const current = rows[0]!;
    const { events, before, after, data } = await diff(tx, current, params);
    if (data.status !== undefined) events.push({ kind: "status", body: `${current.status} → ${data.status}`, data: { from: current.status, to: data.status } });
    if (params.note) events.push({ kind: "note", body: params.note, data: {} });
    if (events.length === 0) return;
    await tx.dlqJobTriage.update({ where: { jobId }, data: { ...data, updatedAt: current.now } });
    await appendEvents(tx, { jobId }, params.actor, events);
    await writeAuditTx(tx, [
      {
        actor: params.actor,
        action: "dlq.job.triage",
        objectType: "job",
        objectId: jobId,
        before,
        after: { ...after, ...(params.note ? { note: params.note } : {}) },
        reason: params.note ?? null,
      },
    ]);
  });
  return getJobTriage(db, jobId);
};

/** The reason codes, offered ones first (then archived), each by code. */
export const listReasonCodes = async (db: ControlTx): Promise<ReasonCode[]> =>
  (await db.dlqReasonCode.findMany({ orderBy: [{ archived: "asc" }, { code: "asc" }] })).map((r) => ({
    code: r.code,
    label: r.label,
    description: r.description,
    archived: r.archived,
  }));

/**
 * Creates or edits a reason code (admin): label, description, archived (retired codes stay on the
 * groups that carry them and are no longer accepted for new triage). Audited as
 * `dlq.reason_code.create` / `dlq.reason_code.update` with before and after.
 */
export const upsertReasonCode = async (db: ControlTx, params: ReasonCode & { actor: string }): Promise<ReasonCode> => {
  if (!/^[a-z][a-z0-9_]{0,39}$/.test(params.code)) throw bad("a reason code is lower-case letters, digits and _ (at most 40), starting with a letter");
  if (!params.label.trim()) throw bad("a reason code needs a label");
  return db.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT code FROM dlq_reason_codes WHERE code = ${params.code} FOR UPDATE`;
    const current = await tx.dlqReasonCode.findUnique({ where: { code: params.code } });
    const fields = { label: params.label.trim(), description: params.description.trim(), archived: params.archived };
    const row = await tx.dlqReasonCode.upsert({ where: { code: params.code }, create: { code: params.code, ...fields }, update: fields });
    const view = { code: row.code, label: row.label, description: row.description, archived: row.archived };
    await writeAuditTx(tx, [
      {
        actor: params.actor,
        action: current ? "dlq.reason_code.update" : "dlq.reason_code.create",
        objectType: "dlq_reason_code",
        objectId: params.code,
        before: current ? { label: current.label, description: current.description, archived: current.archived } : null,
        after: fields,
      },
    ]);
    return view;
  });
};
