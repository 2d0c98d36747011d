import { JOB_ERROR_CODE_NAMES } from "@porter/contracts";
import { type RedriveFilter, redriveJobs } from "@porter/core";
import { intOption, jobIdArg } from "../args";
import { defineCommand } from "../command";
import { UsageError } from "../errors";

/** `text` broken at spaces into lines of at most `width` characters, each indented. */
const wrap = (text: string, width: number, indent: string): string => {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line && indent.length + line.length + 1 + word.length > width) {
      lines.push(indent + line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(indent + line);
  return lines.join("\n");
};

/** `redrive`: DEAD jobs back to READY, by id or by filter, audited. */
export const redriveCommand = defineCommand({
  name: "redrive",
  summary: "move DEAD jobs back to READY (by id or by filter), audited",
  usage: "redrive (<job_id>... | --queue Q [--job-type T] [--tenant T] [--error-code C]) [options] [--json]",
  description:
    "Moves DEAD jobs back to READY with a fresh attempt budget, each with a `redriven` timeline event\n"
    + "and an audit row, in one transaction. Jobs that recorded effects (partially completed) or whose\n"
    + "deadline passed are skipped unless --force. Give job ids, or a filter over DEAD jobs.\n\n"
    + "Error codes Porter records (`porter errors` says what each means; handlers may add their own):\n"
    + wrap(JOB_ERROR_CODE_NAMES.join(", "), 96, "  "),
  options: {
    queue: { type: "string", arg: "<id>", help: "filter: DEAD jobs of this queue" },
    "job-type": { type: "string", arg: "<type>", help: "filter: of this job type" },
    tenant: { type: "string", arg: "<id>", help: "filter: of this tenant" },
    "error-code": { type: "string", arg: "<code>", help: "filter: whose error has this code (see the list above, or `porter errors`)" },
    limit: { type: "string", arg: "<n>", help: "at most this many jobs (default 10000)" },
    force: { type: "boolean", help: "also redrive partially completed and past-deadline jobs (the deadline is cleared)" },
    "dry-run": { type: "boolean", help: "report what would be redriven, change nothing" },
    reason: { type: "string", arg: "<text>", help: "recorded in the audit log and the timeline" },
  },
  positionals: "many",
  run: async (ctx, { cmd, values, positionals }) => {
    const filter: RedriveFilter = {
      ...(values.queue ? { queueId: values.queue } : {}),
      ...(values["job-type"] ? { jobType: values["job-type"] } : {}),
      ...(values.tenant ? { tenantId: values.tenant } : {}),
      ...(values["error-code"] ? { errorCode: values["error-code"] } : {}),
    };
    const hasFilter = Object.keys(filter).length > 0;
    if (positionals.length > 0 && hasFilter) throw new UsageError("redrive: give job ids or a filter, not both");
    if (positionals.length === 0 && !hasFilter) throw new UsageError("redrive: give job ids or a filter such as --queue <id> (see redrive --help)");
    const jobIds = positionals.map((id) => jobIdArg(cmd, id));
    const isDryRun = values["dry-run"] ?? false;
    const limit = intOption(cmd, "limit", values.limit, { min: 1, max: 100_000 });

    const { pool } = await ctx.db();
    ctx.out.progress(
      `redrive: ${isDryRun ? "checking" : "redriving"} ${jobIds.length ? `${jobIds.length} job(s) by id` : `DEAD jobs matching ${describeFilter(filter)}`}…`,
    );
    const outcome = await redriveJobs(pool, {
      ...(jobIds.length ? { jobIds } : { filter }),
      force: values.force ?? false,
      dryRun: isDryRun,
      actor: ctx.actor,
      ...(values.reason ? { reason: values.reason } : {}),
      ...(limit ? { limit } : {}),
    });
    const { skipped } = outcome;
    const reasons = new Map<string, number>();
    for (const s of skipped) reasons.set(s.reason, (reasons.get(s.reason) ?? 0) + 1);
    const human = [
      `${isDryRun ? "would redrive" : "redriven"}: ${outcome.redriven.length} job(s)${skipped.length ? `; skipped ${skipped.length} (${[...reasons].map(([r, n]) => `${r}: ${n}`).join(", ")})` : ""}`,
      ...outcome.redriven.map((id) => `  ${id}`),
      ...skipped.map((s) => `  ${s.job_id} skipped: ${s.reason}`),
    ];
    if (skipped.some((s) => s.reason === "partial" || s.reason === "expired")) {
      human.push("partially completed or past-deadline jobs are redriven only with --force");
    }
    ctx.out.result({ dry_run: isDryRun, redriven: outcome.redriven, skipped }, human);
  },
});

const describeFilter = (f: RedriveFilter): string =>
  [f.queueId && `queue=${f.queueId}`, f.jobType && `job_type=${f.jobType}`, f.tenantId && `tenant=${f.tenantId}`, f.errorCode && `error_code=${f.errorCode}`]
    .filter(Boolean)
    .join(" ");
