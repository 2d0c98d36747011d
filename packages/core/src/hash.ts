import { createHash } from "node:crypto";

/** JSON with object keys sorted, so equal payloads hash equally whatever their key order. */
export const canonicalJson = (value: unknown): string => {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
};

/** Identity of a job's content for idempotency: its type and payload. */
export const payloadHash = (jobType: string, payload: unknown): string =>
  createHash("sha256").update(jobType).update("\0").update(canonicalJson(payload)).digest("hex");
