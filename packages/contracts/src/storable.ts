import { z } from "zod";

// What PostgreSQL can store, checked once here so that every entry point (HTTP, SDK, CLI, console)
// refuses the same input with the same 400 — before it reaches a statement it would fail, and with
// it every other request coalesced into that statement.

/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Why PostgreSQL cannot store `value` as text (or inside jsonb), or null when it can: `text` and
 * `jsonb` refuse U+0000, and a lone UTF-16 surrogate is not a character (it cannot be encoded as
 * UTF-8: the driver would silently replace it, so a stored key would no longer match its request).
 */
export const unstorableTextReason = (value: string): string | null => {
  if (value.includes("\u0000")) return "must not contain the NUL character (\\u0000): PostgreSQL cannot store it";
  if (LONE_SURROGATE.test(value)) return "must not contain a lone surrogate (\\ud800–\\udfff): it is not a Unicode character";
  return null;
};

/**
 * A string PostgreSQL can store: no NUL, no lone surrogate. The base of every string input that
 * reaches the database; chain `.trim()`, `.min()`, `.max()`, `.regex()` on it as on `z.string()`.
 */
export const ZStorableText = z.string().superRefine((value, ctx) => {
  const reason = unstorableTextReason(value);
  if (reason) ctx.addIssue({ code: "custom", message: reason });
});

/** Earliest and latest instants accepted in a date-time input (both storable as timestamptz). */
export const MIN_DATE_TIME = "1970-01-01T00:00:00Z";
export const MAX_DATE_TIME = "9999-12-31T23:59:59Z";
const MIN_MS = Date.parse(MIN_DATE_TIME);
const MAX_MS = Date.parse(MAX_DATE_TIME) + 999;

/**
 * An ISO 8601 date-time with an offset (`2026-12-01T10:00:00Z`, `…+02:00`) between 1970-01-01
 * and 9999-12-31 UTC. Outside that range PostgreSQL refuses the value (year 0 does not exist for
 * it, year 10000 cannot be written as ISO 8601), and no job needs it.
 */
export const ZDateTime = z.iso.datetime({ offset: true, error: "an ISO 8601 date-time with an offset, e.g. 2026-12-01T10:00:00Z" }).refine(
  (value) => {
    const ms = Date.parse(value);
    return ms >= MIN_MS && ms <= MAX_MS;
  },
  { message: `must be between ${MIN_DATE_TIME} and ${MAX_DATE_TIME}` },
);

/** Deepest nesting of objects and arrays accepted in a payload (the payload object itself is depth 1). */
export const MAX_PAYLOAD_DEPTH = 32;

type PayloadIssue = { path: PropertyKey[]; message: string };
type Frame = { node: unknown[] | Record<string, unknown>; keys: string[] | null; next: number; key: PropertyKey | null };

// payloadIssue's helpers live out here, not as closures inside it: under tsx (which `npm start`
// runs) every named closure is wrapped at creation in esbuild's keepNames helper — a
// defineProperty of its name, ≈ 1 µs — and payloadIssue runs once per enqueued job.

/** The path of `key` in the container on top of `frames` (the payload itself is the bottom frame). */
const pathTo = (frames: Frame[], key: PropertyKey | null): PropertyKey[] => [...frames.slice(1).map((f) => f.key!), ...(key === null ? [] : [key])];

/** Checks a scalar, or opens a container (a frame on `frames`) to walk next. */
const visit = (frames: Frame[], value: unknown, key: PropertyKey | null): PayloadIssue | null => {
  if (value === null || typeof value === "boolean") return null;
  if (typeof value === "string") {
    const reason = unstorableTextReason(value);
    return reason ? { path: pathTo(frames, key), message: reason } : null;
  }
  if (typeof value === "number") return Number.isFinite(value) ? null : { path: pathTo(frames, key), message: "must be a finite number" };
  const isArray = Array.isArray(value);
  const proto = typeof value === "object" ? Object.getPrototypeOf(value) : undefined;
  if (!isArray && proto !== Object.prototype && proto !== null) {
    return { path: pathTo(frames, key), message: "must be JSON: null, a boolean, a number, a string, an array or an object" };
  }
  if (frames.length >= MAX_PAYLOAD_DEPTH) {
    return { path: pathTo(frames, key), message: `nests deeper than ${MAX_PAYLOAD_DEPTH} levels; payloads carry references, not documents` };
  }
  const node = value as unknown[] | Record<string, unknown>;
  frames.push({ node, keys: isArray ? null : Object.keys(node), next: 0, key });
  return null;
};

/**
 * The first thing in a payload PostgreSQL's jsonb cannot store or Porter refuses, or null: nesting
 * deeper than MAX_PAYLOAD_DEPTH, a key or string that is not storable text, a number that is not
 * finite, a value that is not JSON (undefined, bigint, a function, a class instance such as Date).
 * Iterative with one frame per open container, so neither a payload nested 100 000 levels deep nor
 * an array of millions of items costs more than a loop — it runs before anything recursive
 * (JSON.stringify) sees the payload.
 */
export const payloadIssue = (payload: unknown): PayloadIssue | null => {
  const frames: Frame[] = [];
  const rootIssue = visit(frames, payload, null);
  if (rootIssue) return rootIssue;
  while (frames.length > 0) {
    const frame = frames.at(-1)!;
    const size = frame.keys ? frame.keys.length : (frame.node as unknown[]).length;
    if (frame.next >= size) {
      frames.pop();
      continue;
    }
    const i = frame.next++;
    if (frame.keys) {
      const key = frame.keys[i]!;
      const reason = unstorableTextReason(key);
      if (reason) return { path: pathTo(frames, key), message: `key ${reason}` };
      const issue = visit(frames, (frame.node as Record<string, unknown>)[key], key);
      if (issue) return issue;
    } else {
      const issue = visit(frames, (frame.node as unknown[])[i], i);
      if (issue) return issue;
    }
  }
  return null;
};
