import { randomUUID } from "node:crypto";
import { AppError, ZEnqueueRequest } from "@porter/contracts";
import { enqueueJobs } from "@porter/core";
import { intOption, isoOption, parseCommandArgs, required } from "../args";
import { type Command, helpText } from "../command";
import { UsageError } from "../errors";

/** `enqueue`: one job, through the same validation, clamping and idempotency as the API. */
export const enqueueCommand: Command = {
  name: "enqueue",
  summary: "enqueue one job",
  help: helpText(
    "enqueue --type <job_type> --tenant <id> --payload '<json>' [options] [--json]",
    "Enqueues one job as a producer would (the queue comes from the job type; priority, attempts and\n"
      + "timeout are clamped to the queue's and tenant's ceilings). The same tenant and idempotency key\n"
      + 'return the existing job. With --json prints {"job_id", "status", "deduplicated"}.\n\n'
      + "Example: npm run porter -- enqueue --type diag.sleep --tenant tenant_A --payload '{\"ms\":10}'",
    [
      ["--type <job_type>", "registered job type (required)"],
      ["--tenant <id>", "tenant the job belongs to (required)"],
      ["--payload <json>", "a JSON object of references (default {})"],
      ["--priority <0-100>", "priority, clamped by policy (default: the queue's)"],
      ["--idempotency-key <key>", "deduplication key (default: a new random key)"],
      ["--max-attempts <n>", "attempt budget, clamped to the queue's retry ceiling"],
      ["--timeout-s <n>", "per-attempt timeout in seconds"],
      ["--deadline-at <iso>", "give up (EXPIRED) after this instant"],
      ["--not-before <iso>", "do not start before this instant"],
      ["--trace-id <id>", "trace id to carry (default: generated)"],
    ],
  ),
  run: async (ctx, argv) => {
    const cmd = "enqueue";
    const { values } = parseCommandArgs(cmd, argv, {
      type: { type: "string" },
      tenant: { type: "string" },
      payload: { type: "string" },
      priority: { type: "string" },
      "idempotency-key": { type: "string" },
      "max-attempts": { type: "string" },
      "timeout-s": { type: "string" },
      "deadline-at": { type: "string" },
      "not-before": { type: "string" },
      "trace-id": { type: "string" },
    });
    const payload = parsePayload(values.payload ?? "{}");
    const candidate = {
      job_type: required(cmd, "type", values.type),
      tenant_id: required(cmd, "tenant", values.tenant),
      payload,
      idempotency_key: values["idempotency-key"] ?? `cli-${randomUUID()}`,
      priority: intOption(cmd, "priority", values.priority, { min: 0, max: 100 }),
      max_attempts: intOption(cmd, "max-attempts", values["max-attempts"], { min: 1, max: 1000 }),
      timeout_s: intOption(cmd, "timeout-s", values["timeout-s"], { min: 1, max: 86_400 }),
      deadline_at: isoOption(cmd, "deadline-at", values["deadline-at"]),
      not_before: isoOption(cmd, "not-before", values["not-before"]),
      trace_id: values["trace-id"],
    };
    const parsed = ZEnqueueRequest.safeParse(Object.fromEntries(Object.entries(candidate).filter(([, v]) => v !== undefined)));
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "request"}: ${i.message}`).join("; ");
      throw new AppError("BAD_REQUEST", { message: `invalid job: ${issues}` });
    }
    const { pool } = await ctx.db();
    const [result] = await enqueueJobs(pool, [{ ...parsed.data, tenant_id: candidate.tenant_id }]);
    if (!result) throw new Error("enqueue returned no result");
    ctx.out.result(
      result,
      result.deduplicated
        ? `${result.job_id} ${result.status} (deduplicated: idempotency key "${candidate.idempotency_key}" was already used)`
        : `${result.job_id} ${result.status}`,
    );
  },
};

const parsePayload = (text: string): Record<string, unknown> => {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`enqueue: --payload is not valid JSON (${(error as Error).message})`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new UsageError('enqueue: --payload must be a JSON object, e.g. \'{"source_ref":"s3://bucket/key"}\'');
  }
  return value as Record<string, unknown>;
};
