import {
  DLQ_STATUS_NAMES,
  type DlqGroupSummary,
  type DlqStatus,
  getDlqGroup,
  listDlqGroupJobs,
  listDlqGroups,
  listReasonCodes,
  triageGroup,
} from "@porter/core";
import { intOption, isoOption } from "../args";
import { defineCommand } from "../command";
import { UsageError } from "../errors";
import { formatTable } from "../output";

const statusOption = (cmd: string, value: string | undefined): DlqStatus | undefined => {
  if (value === undefined) return undefined;
  if (!(DLQ_STATUS_NAMES as readonly string[]).includes(value))
    throw new UsageError(`${cmd}: --status must be one of ${DLQ_STATUS_NAMES.join(", ")}, got "${value}"`);
  return value as DlqStatus;
};

const groupArg = (cmd: string, value: string): string => {
  if (!/^[1-9][0-9]{0,17}$/.test(value)) throw new UsageError(`${cmd}: "${value}" is not a failure group id (see dlq groups)`);
  return value;
};

/**
 * `--owner me` from the CLI: the CLI's actor is `cli:<os user>`; it names a console user only when
 * it is an e-mail (`user:<email>` or `cli:<email>`). Otherwise the owner must be given as an e-mail.
 */
const meOf = (cmd: string, actor: string): string => {
  const name = actor.replace(/^(user|cli):/, "");
  if (/^[^@\s]+@[^@\s]+$/.test(name)) return name;
  throw new UsageError(`${cmd}: --owner me needs a console user, and this CLI runs as ${actor}; give --owner <email>`);
};

/** A group as the CLI prints it with --json (the issue's shape: owner as an e-mail or null). */
const cliGroup = (g: DlqGroupSummary) => ({
  id: g.id,
  fingerprint: g.fingerprint,
  job_type: g.job_type,
  error_code: g.error_code,
  sample_message: g.sample_message,
  count: g.count,
  dead_now: g.dead_now,
  first_seen: g.first_seen,
  last_seen: g.last_seen,
  status: g.status,
  owner: g.owner?.email ?? null,
  reason_code: g.reason_code,
  tenants: g.tenants,
});

const oneLine = (text: string, width: number) => {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > width ? `${flat.slice(0, width - 1)}…` : flat;
};

/** `dlq groups`: the failure groups with jobs still DEAD, most recent first. */
export const dlqGroupsCommand = defineCommand({
  name: "dlq groups",
  summary: "list failure groups of dead jobs (count, dead now, owner, status)",
  usage: "dlq groups [--queue Q] [--status S] [--job-type T] [--owner me|none|<email>] [--limit N] [--all] [--json]",
  description:
    "Lists the failure groups: dead jobs with one fingerprint (job type, error code, class and the\n"
    + "message with ids, numbers, hosts and quoted values normalized away), maintained as jobs die.\n"
    + "Only groups with jobs still DEAD unless --all; most recently seen first.",
  options: {
    queue: { type: "string", arg: "<id>", help: "groups with deaths in this queue" },
    status: { type: "string", arg: "<status>", help: `triage status: ${DLQ_STATUS_NAMES.join(", ")}` },
    "job-type": { type: "string", arg: "<type>", help: "of this job type" },
    tenant: { type: "string", arg: "<id>", help: "groups with deaths of this tenant" },
    "error-code": { type: "string", arg: "<code>", help: "of this error code" },
    owner: { type: "string", arg: "<who>", help: "me (the CLI user, when an e-mail), none (unowned) or a user's e-mail" },
    limit: { type: "string", arg: "<n>", help: "at most this many groups (default 25, at most 200)" },
    all: { type: "boolean", help: "also groups whose jobs were all redriven or pruned" },
  },
  run: async (ctx, { cmd, values }) => {
    const status = statusOption(cmd, values.status);
    const limit = intOption(cmd, "limit", values.limit, { min: 1, max: 200 }) ?? 25;
    const owner = values.owner === "me" ? meOf(cmd, ctx.actor) : values.owner;
    const { pool } = await ctx.db();
    const page = await listDlqGroups(pool, {
      ...(values.queue ? { queueId: values.queue } : {}),
      ...(values["job-type"] ? { jobType: values["job-type"] } : {}),
      ...(values.tenant ? { tenantId: values.tenant } : {}),
      ...(values["error-code"] ? { errorCode: values["error-code"] } : {}),
      ...(status ? { status } : {}),
      ...(owner ? { owner } : {}),
      isDeadOnly: !values.all,
      limit,
    });
    const groups = page.groups.map(cliGroup);
    const human =
      groups.length === 0
        ? ["no failure groups match"]
        : [
            ...formatTable([
              ["GROUP", "DEAD", "COUNT", "STATUS", "OWNER", "LAST SEEN", "TYPE / CODE", "SAMPLE"],
              ...groups.map((g) => [
                g.id,
                String(g.dead_now),
                String(g.count),
                g.status,
                g.owner ?? "-",
                g.last_seen,
                `${g.job_type} ${g.error_code}`,
                oneLine(g.sample_message, 60),
              ]),
            ]),
            ...(page.total > groups.length ? [`(${groups.length} of ${page.total}; --limit for more)`] : []),
          ];
    ctx.out.result({ groups }, human);
  },
});

/** `dlq show <group>`: one group with its thread and its newest dead jobs. */
export const dlqShowCommand = defineCommand({
  name: "dlq show",
  summary: "show a failure group: counts, tenants, worker versions, thread, newest dead jobs",
  usage: "dlq show <group> [--jobs N] [--json]",
  description:
    "Shows one failure group: its counts and sample, top tenants and queues, worker versions, the\ntriage thread (notes and changes) and its newest jobs still DEAD.",
  options: { jobs: { type: "string", arg: "<n>", help: "how many dead jobs to list (default 5, at most 200)" } },
  positionals: { exactlyOne: "failure group id" },
  run: async (ctx, { cmd, values, positionals: [arg] }) => {
    const id = groupArg(cmd, arg);
    const n = intOption(cmd, "jobs", values.jobs, { min: 1, max: 200 }) ?? 5;
    const { pool } = await ctx.db();
    const group = await getDlqGroup(pool, id);
    if (!group) throw new UsageError(`${cmd}: no failure group ${id} (see dlq groups)`);
    const { jobs } = await listDlqGroupJobs(pool, { id, limit: n });
    const human = [
      `group ${group.id}  ${group.job_type}  ${group.error_code} (${group.error_class})  status ${group.status}${group.is_regression ? " (regression)" : ""}`,
      `  owner ${group.owner?.email ?? "-"}  reason ${group.reason_code ?? "-"}${group.ignored_until ? `  ignored until ${group.ignored_until}` : ""}${group.ignore_remaining ? `  ignored for ${group.ignore_remaining} more` : ""}`,
      `  dead now ${group.dead_now} of ${group.count}  first ${group.first_seen}  last ${group.last_seen}  oldest dead ${group.oldest_dead_at ?? "-"}`,
      `  sample: ${oneLine(group.sample_message, 200)}`,
      `  tenants: ${group.tenants.map((t) => `${t.tenant_id} ${t.count}`).join(", ") || "-"}`,
      `  queues: ${group.queues.map((q) => `${q.queue_id} ${q.count}`).join(", ") || "-"}`,
      `  worker versions: ${group.worker_versions.map((v) => `${v.version} ${v.count}`).join(", ") || "-"}`,
      "thread:",
      ...(group.events.length ? group.events.map((e) => `  ${e.at}  ${e.actor}  ${e.kind}: ${e.body ?? ""}`) : ["  (empty)"]),
      "dead jobs:",
      ...(jobs.length
        ? formatTable([["JOB", "TENANT", "DIED", "ATTEMPT"], ...jobs.map((j) => [j.job_id, j.tenant_id, j.died_at, String(j.attempt)])], "  ")
        : ["  (none)"]),
    ];
    ctx.out.result({ group: { ...cliGroup(group), ...group, owner: group.owner?.email ?? null }, jobs }, human);
  },
});

/** `dlq assign <group>`: owner, status, reason, note — the console's triage, from the CLI. */
export const dlqAssignCommand = defineCommand({
  name: "dlq assign",
  summary: "triage a failure group: owner, status, reason code, note (audited)",
  usage: "dlq assign <group> [--owner <email|me|none>] [--status S] [--reason CODE] [--note TEXT] [--ignore-until ISO | --ignore-more N] [--json]",
  description:
    "Triages a failure group in one audited change: its owner (a console user's e-mail; me when the\n"
    + "CLI user is one; none to unassign), status, reason code (see dlq reasons) and a note on its\n"
    + "thread. --ignore-until / --ignore-more set status ignored until a date or N more deaths; a\n"
    + "resolved or ignored group reopens as a regression when a new death arrives after that.",
  options: {
    owner: { type: "string", arg: "<who>", help: "a console user's e-mail, me, or none to unassign" },
    status: { type: "string", arg: "<status>", help: `${DLQ_STATUS_NAMES.join(", ")}` },
    reason: { type: "string", arg: "<code>", help: "a reason code (dlq reasons), or none to clear" },
    note: { type: "string", arg: "<text>", help: "a note appended to the group's thread" },
    "ignore-until": { type: "string", arg: "<iso>", help: "ignore until this time (status ignored)" },
    "ignore-more": { type: "string", arg: "<n>", help: "ignore until N more deaths arrive (status ignored)" },
  },
  positionals: { exactlyOne: "failure group id" },
  run: async (ctx, { cmd, values, positionals: [arg] }) => {
    const id = groupArg(cmd, arg);
    const until = isoOption(cmd, "ignore-until", values["ignore-until"]);
    const more = intOption(cmd, "ignore-more", values["ignore-more"], { min: 1, max: 1_000_000 });
    if (until && more) throw new UsageError(`${cmd}: give --ignore-until or --ignore-more, not both`);
    let status = statusOption(cmd, values.status);
    if (until || more) {
      if (status && status !== "ignored") throw new UsageError(`${cmd}: --ignore-until/--ignore-more go with status ignored`);
      status = "ignored";
    } else if (status === "ignored") throw new UsageError(`${cmd}: status ignored needs --ignore-until <iso> or --ignore-more <n>`);
    const owner = values.owner === undefined ? undefined : values.owner === "none" ? null : values.owner === "me" ? meOf(cmd, ctx.actor) : values.owner;
    const reason = values.reason === undefined ? undefined : values.reason === "none" ? null : values.reason;
    if (owner === undefined && !status && reason === undefined && !values.note) {
      throw new UsageError(`${cmd}: change something: --owner, --status, --reason or --note (see ${cmd} --help)`);
    }
    const { pool, prisma } = await ctx.db();
    await triageGroup(prisma, {
      id,
      ...(owner !== undefined ? { owner } : {}),
      ...(status ? { status } : {}),
      ...(until ? { ignore: { until } } : more ? { ignore: { more } } : {}),
      ...(reason !== undefined ? { reason_code: reason } : {}),
      ...(values.note ? { note: values.note } : {}),
      actor: ctx.actor,
    });
    const group = await getDlqGroup(pool, id);
    if (!group) throw new UsageError(`${cmd}: no failure group ${id}`);
    ctx.out.result(
      {
        group: {
          ...cliGroup(group),
          ignored_until: group.ignored_until,
          ignore_remaining: group.ignore_remaining,
          is_regression: group.is_regression,
          events: group.events,
        },
      },
      `group ${id}: status ${group.status}, owner ${group.owner?.email ?? "-"}, reason ${group.reason_code ?? "-"}${values.note ? "; note added" : ""}`,
    );
  },
});

/** `dlq reasons`: the reason codes operators can give a group. */
export const dlqReasonsCommand = defineCommand({
  name: "dlq reasons",
  summary: "list the reason codes of failure-group triage",
  usage: "dlq reasons [--json]",
  description:
    "Lists the reason codes a failure group can be given (dlq assign --reason). Admins edit the list\nin the console; archived codes are kept on the groups that carry them and no longer accepted.",
  run: async (ctx) => {
    const { prisma } = await ctx.db();
    const codes = await listReasonCodes(prisma);
    ctx.out.result(
      { codes },
      formatTable([["CODE", "LABEL", "DESCRIPTION"], ...codes.map((c) => [c.code + (c.archived ? " (archived)" : ""), c.label, c.description])]),
    );
  },
});
