import { JOB_STATES, type TJobState } from "@porter/contracts";
import { type JobFilter, type JobListRow, listJobs } from "@porter/core";
import { intOption, isoOption, jobIdArg, listOption } from "../args";
import { defineCommand } from "../command";
import { UsageError } from "../errors";
import { formatTable } from "../output";

/** A `next_cursor` of a previous page: a job id's 16 bytes in base64url (the console's ZJobsCursor). */
const CURSOR = /^[A-Za-z0-9_-]{22}$/;

/** `jobs list`: the console's jobs browser (same filters, same read, same cursor), newest first. */
export const jobsListCommand = defineCommand({
  name: "jobs list",
  summary: "list jobs (live and finished), newest first, filtered as in the console",
  usage: "jobs list [--state S[,S...]] [--queue Q] [--job-type T] [--tenant T] [--from TS] [--to TS] [--limit N] [--cursor C] [--json]",
  description:
    "Lists jobs, live and finished together, newest first: the console's jobs browser (the same read and\n"
    + "filters; every filter narrows). A page holds --limit jobs; when there are more, the next page's\n"
    + "cursor is printed (`next cursor: …`, or `next_cursor` with --json): pass it as --cursor.\n\n"
    + `States: ${JOB_STATES.join(", ")}.`,
  options: {
    state: { type: "string", multiple: true, arg: "<states>", help: "in one of these states; comma-separated or repeated" },
    queue: { type: "string", arg: "<id>", help: "of this queue" },
    "job-type": { type: "string", arg: "<type>", help: "of this job type" },
    tenant: { type: "string", arg: "<id>", help: "of this tenant" },
    from: { type: "string", arg: "<ts>", help: "created at or after (ISO 8601 with a zone, e.g. 2026-12-01T10:00:00Z)" },
    to: { type: "string", arg: "<ts>", help: "created before (ISO 8601 with a zone)" },
    "idempotency-key": { type: "string", arg: "<key>", help: "with this idempotency key" },
    "job-id": { type: "string", arg: "<id>", help: "this job (a UUID)" },
    "trace-id": { type: "string", arg: "<id>", help: "with this trace id" },
    limit: { type: "string", arg: "<n>", help: "jobs per page, 1 to 200 (default 50)" },
    cursor: { type: "string", arg: "<cursor>", help: "the next page: the cursor the previous page printed" },
  },
  run: async (ctx, { cmd, values }) => {
    const filter = jobFilterOf(cmd, values);
    const limit = intOption(cmd, "limit", values.limit, { min: 1, max: 200 }) ?? 50;
    if (values.cursor !== undefined && !CURSOR.test(values.cursor)) {
      throw new UsageError(`${cmd}: --cursor must be the cursor a previous page printed, got "${values.cursor}"`);
    }
    const { pool } = await ctx.db();
    const page = await listJobs(pool, { filter, cursor: values.cursor ?? null, limit });
    ctx.out.result(page, formatJobList(page.jobs, page.next_cursor));
  },
});

type FilterValues = {
  state?: string[] | undefined;
  queue?: string | undefined;
  "job-type"?: string | undefined;
  tenant?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
  "idempotency-key"?: string | undefined;
  "job-id"?: string | undefined;
  "trace-id"?: string | undefined;
};

/** The options as core's JobFilter, or a usage error naming the bad one. */
const jobFilterOf = (cmd: string, values: FilterValues): JobFilter => {
  const states = listOption(values.state).map((s) => s.toUpperCase());
  const unknown = states.filter((s) => !(JOB_STATES as readonly string[]).includes(s));
  if (unknown.length) throw new UsageError(`${cmd}: unknown state(s) ${unknown.join(", ")}; states: ${JOB_STATES.join(", ")}`);
  const text = (name: keyof FilterValues & string, value: string | undefined): string | undefined => {
    if (value === undefined) return undefined;
    const trimmed = value.trim();
    if (trimmed.length === 0 || trimmed.length > 500) throw new UsageError(`${cmd}: --${name} must be 1 to 500 characters`);
    return trimmed;
  };
  const from = isoOption(cmd, "from", values.from);
  const to = isoOption(cmd, "to", values.to);
  if (from && to && from >= to) throw new UsageError(`${cmd}: --from must be before --to`);
  const queueId = text("queue", values.queue);
  const jobType = text("job-type", values["job-type"]);
  const tenantId = text("tenant", values.tenant);
  const idempotencyKey = text("idempotency-key", values["idempotency-key"]);
  const traceId = text("trace-id", values["trace-id"]);
  return {
    ...(states.length ? { states: states as TJobState[] } : {}),
    ...(queueId ? { queueId } : {}),
    ...(jobType ? { jobType } : {}),
    ...(tenantId ? { tenantId } : {}),
    ...(from ? { from: new Date(from) } : {}),
    ...(to ? { to: new Date(to) } : {}),
    ...(idempotencyKey ? { idempotencyKey } : {}),
    ...(values["job-id"] !== undefined ? { jobId: jobIdArg(cmd, values["job-id"]) } : {}),
    ...(traceId ? { traceId } : {}),
  };
};

/** Human rendering of a page: a table, then where the next page starts. */
const formatJobList = (jobs: JobListRow[], nextCursor: string | null): string[] => {
  if (jobs.length === 0) return ["no jobs match"];
  const table = formatTable([
    ["job_id", "state", "queue", "job_type", "tenant", "attempt", "created_at", "error"],
    ...jobs.map((j) => [
      j.job_id,
      j.state + (j.cancel_requested && j.state === "RUNNING" ? " (cancel requested)" : ""),
      j.queue_id,
      j.job_type,
      j.tenant_id,
      `${j.attempt}/${j.max_attempts}`,
      j.created_at,
      j.error_code ?? "",
    ]),
  ]);
  return [...table, nextCursor ? `next cursor: ${nextCursor} (jobs list … --cursor ${nextCursor})` : `${jobs.length} job(s); last page`];
};
