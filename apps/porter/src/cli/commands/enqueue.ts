import { randomUUID } from "node:crypto";
import { AppError, ZEnqueueRequest } from "@porter/contracts";
import { enqueueJobs } from "@porter/core";
import { intOption, isoOption } from "../args";
import { defineCommand } from "../command";
import { UsageError } from "../errors";

/** `enqueue`: one job, through the same validation, clamping and idempotency as the API. */
export const enqueueCommand = defineCommand({
  name: "enqueue",
  summary: "enqueue one job",
  usage: "enqueue --type <job_type> --tenant <id> --payload '<json>' [options] [--json]",
  description:
    "Enqueues one job as a producer would (the queue comes from the job type; priority, attempts and\n"
    + "timeout are clamped to the queue's and tenant's ceilings). The same tenant and idempotency key\n"
    + 'return the existing job. With --json prints {"job_id", "status", "deduplicated"}.\n\n'
    + "Example: npm run porter -- enqueue --type diag.sleep --tenant tenant_A --payload '{\"ms\":10}'",
  options: {
    type: { type: "string", arg: "<job_type>", help: "registered job type (required)", required: true },
    tenant: { type: "string", arg: "<id>", help: "tenant the job belongs to (required)", required: true },
    payload: { type: "string", arg: "<json>", help: "a JSON object of references (default {})" },
    priority: { type: "string", arg: "<0-100>", help: "priority, clamped by policy (default: the queue's)" },
    "idempotency-key": { type: "string", arg: "<key>", help: "deduplication key (default: a new random key)" },
    "max-attempts": { type: "string", arg: "<n>", help: "attempt budget, clamped to the queue's retry ceiling" },
    "timeout-s": { type: "string", arg: "<n>", help: "per-attempt timeout in seconds" },
    "deadline-at": { type: "string", arg: "<iso>", help: "give up (EXPIRED) after this instant" },
    "not-before": { type: "string", arg: "<iso>", help: "do not start before this instant" },
    "trace-id": { type: "string", arg: "<id>", help: "trace id to carry (default: generated)" },
    traceparent: { type: "string", arg: "<w3c>", help: "W3C traceparent the job's attempts are children of (its trace id is the job's)" },
  },
  run: async (ctx, { cmd, values }) => {
    const payload = parsePayload(values.payload ?? "{}");
    const candidate = {
      job_type: values.type,
      tenant_id: values.tenant,
      payload,
      idempotency_key: values["idempotency-key"] ?? `cli-${randomUUID()}`,
      priority: intOption(cmd, "priority", values.priority, { min: 0, max: 100 }),
      max_attempts: intOption(cmd, "max-attempts", values["max-attempts"], { min: 1, max: 1000 }),
      timeout_s: intOption(cmd, "timeout-s", values["timeout-s"], { min: 1, max: 86_400 }),
      deadline_at: isoOption(cmd, "deadline-at", values["deadline-at"]),
      not_before: isoOption(cmd, "not-before", values["not-before"]),
      trace_id: values["trace-id"],
      traceparent: values.traceparent,
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
});

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
