import { AppError, type TJobStatus } from "@porter/contracts";
import { getJob } from "@porter/core";
import { jobIdArg } from "../args";
import { defineCommand } from "../command";
import { formatTable } from "../output";

/** `jobs get`: a job wherever it is, with its timeline. */
export const jobsGetCommand = defineCommand({
  name: "jobs get",
  summary: "show a job: envelope, status and timeline",
  usage: "jobs get <job_id> [--json]",
  description:
    "Shows a job (live or finished): its job.v1 envelope, status, result or error, and timeline.\n"
    + "With --json prints the job status object of producer.get.",
  positionals: { exactlyOne: "job id" },
  run: async (ctx, { cmd, positionals: [id] }) => {
    const jobId = jobIdArg(cmd, id);
    const { pool } = await ctx.db();
    const job = await getJob(pool, jobId);
    if (!job) throw new AppError("NOT_FOUND", { message: `job ${jobId} not found` });
    ctx.out.result(job, formatJob(job));
  },
});

/** Human rendering of a job: fields, then the timeline as a table. */
export const formatJob = (job: TJobStatus): string[] => {
  const fields: Array<[string, string]> = [
    ["job_id", job.job_id],
    ["status", job.status + (job.cancel_requested && job.status === "RUNNING" ? " (cancel requested)" : "") + (job.partial ? " (partially completed)" : "")],
    ["job_type", job.job_type],
    ["queue", job.queue_id],
    ["tenant", job.tenant_id],
    ["attempt", `${job.attempt} of ${job.max_attempts}`],
    ["priority", String(job.priority)],
    ["timeout_s", String(job.timeout_s)],
    ["idempotency_key", job.idempotency_key],
    ["trace_id", job.trace_id],
    ["created_at", job.created_at],
  ];
  if (job.traceparent) fields.splice(fields.length - 1, 0, ["traceparent", job.traceparent]);
  if (job.not_before) fields.push(["not_before", job.not_before]);
  if (job.deadline_at) fields.push(["deadline_at", job.deadline_at]);
  if (job.run_at) fields.push(["run_at", job.run_at]);
  if (job.finished_at) fields.push(["finished_at", job.finished_at]);
  fields.push(["payload", JSON.stringify(job.payload)]);
  if (job.result !== null && job.result !== undefined) fields.push(["result", JSON.stringify(job.result)]);
  if (job.error) fields.push(["error", `${job.error.code} (${job.error.class}, attempt ${job.error.attempt}): ${job.error.message}`]);
  const timeline = formatTable(
    [
      ["at", "event", "attempt", "actor", "details"],
      ...job.timeline.map((e) => [e.at, e.kind, e.attempt === null ? "" : String(e.attempt), e.actor ?? "", e.data ? JSON.stringify(e.data) : ""]),
    ],
    "  ",
  );
  return [...formatTable(fields.map(([k, v]) => [`${k}:`, v])), "", "timeline:", ...timeline];
};
