import fc from "fast-check";
import type pg from "pg";

// Arbitraries of hostile input for the bad-input property suite (bad-input.int.test.ts): strings
// PostgreSQL cannot store (NUL, lone surrogates), numbers past every range, dates outside what a
// timestamptz holds, deep nesting, wrong types — mixed with valid values, so a generated request
// is often one bad field away from an accepted one.

/** A number literal JSON can carry but JavaScript cannot hold exactly; written into the body as is. */
export class RawNumber {
  constructor(readonly literal: string) {}
}

/** Nested `depth` levels deep, as JSON text (built as text: a recursive stringify would overflow). */
export class DeepJson {
  constructor(
    readonly depth: number,
    readonly kind: "array" | "object",
  ) {}
  toText(): string {
    return this.kind === "array" ? `${"[".repeat(this.depth)}${"]".repeat(this.depth)}` : `${'{"a":'.repeat(this.depth)}1${"}".repeat(this.depth)}`;
  }
}

/** JSON text of `value`, with RawNumber and DeepJson written verbatim. Iterative over the value. */
export const toJsonText = (value: unknown): string => {
  const out: string[] = [];
  const stack: unknown[] = [value];
  const LITERAL = Symbol("literal");
  while (stack.length > 0) {
    const v = stack.pop();
    if (v && typeof v === "object" && LITERAL in v) out.push((v as unknown as Record<symbol, string>)[LITERAL]!);
    else if (v instanceof RawNumber) out.push(v.literal);
    else if (v instanceof DeepJson) out.push(v.toText());
    else if (Array.isArray(v)) {
      const parts: unknown[] = [{ [LITERAL]: "[" }];
      for (const [i, item] of v.entries()) parts.push(...(i ? [{ [LITERAL]: "," }] : []), item);
      parts.push({ [LITERAL]: "]" });
      stack.push(...parts.reverse());
    } else if (v && typeof v === "object") {
      const parts: unknown[] = [{ [LITERAL]: "{" }];
      for (const [i, [k, item]] of Object.entries(v).entries()) parts.push({ [LITERAL]: `${i ? "," : ""}${JSON.stringify(k)}:` }, item);
      parts.push({ [LITERAL]: "}" });
      stack.push(...parts.reverse());
    } else out.push(JSON.stringify(v) ?? "null");
  }
  return out.join("");
};

const ODD_PIECES = [
  "\u0000",
  "\ud800",
  "\udfff",
  "\udc00\ud800",
  "\uffff",
  "\ufeff",
  "\u2028",
  "'",
  '"',
  "\\",
  "{",
  "}",
  ",",
  "NULL",
  "%00",
  "\\u0000",
  " ",
  "é",
  "😀",
];

/** Strings with NUL, lone surrogates, quotes, braces and escapes in them (and plain ones). */
export const nastyString = (maxLength = 12): fc.Arbitrary<string> =>
  fc.oneof(
    fc.string({ maxLength }),
    fc.array(fc.oneof(fc.string({ maxLength: 3 }), fc.constantFrom(...ODD_PIECES)), { minLength: 1, maxLength: 6 }).map((a) => a.join("")),
    fc.string({ unit: "binary", maxLength }),
    fc.constantFrom("", " ", "x".repeat(600)),
  );

/** Numbers at and past every edge, some only expressible as JSON text. */
export const nastyNumber: fc.Arbitrary<number | RawNumber> = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -1, 1.5, 2 ** 31, 2 ** 53 + 1, -(2 ** 63), 1e308, -1e308, 5e-324),
  fc.constantFrom("99999999999999999999", "1e400", "-1e400", "1e-400", "123456789012345678901234567890", "-0").map((s) => new RawNumber(s)),
);

const OFFSETS = ["Z", "+00:00", "-14:00", "+14:00", "+23:59", "-23:59", "+05:30"];

/** ISO-like date strings: far past and future, edge offsets, impossible fields, and plain valid ones. */
export const oddDate: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    "0000-01-01T00:00:00Z",
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59-14:00",
    "9999-12-31T23:59:59Z",
    "+275760-09-13T00:00:00Z",
    "-000001-01-01T00:00:00Z",
    "2026-02-30T00:00:00Z",
    "2026-01-01T24:00:00Z",
    "2026-01-01T00:00:60Z",
    "1969-12-31T23:59:59Z",
    "1970-01-01T00:00:00Z",
    "2026-01-01T00:00:00.123456789Z",
    "2026-01-01T00:00:00",
    "2026-01-01",
    "tomorrow",
  ),
  fc
    .tuple(
      fc.integer({ min: 0, max: 9999 }),
      fc.integer({ min: 1, max: 12 }),
      fc.integer({ min: 1, max: 28 }),
      fc.integer({ min: 0, max: 86_399 }),
      fc.constantFrom(...OFFSETS),
    )
    .map(([y, m, d, s, offset]) => {
      const pad = (n: number, w = 2) => String(n).padStart(w, "0");
      return `${pad(y, 4)}-${pad(m)}-${pad(d)}T${pad(Math.floor(s / 3600))}:${pad(Math.floor(s / 60) % 60)}:${pad(s % 60)}${offset}`;
    }),
  fc.date({ min: new Date(Date.now() - 86_400_000), max: new Date(Date.now() + 30 * 86_400_000), noInvalidDate: true }).map((d) => d.toISOString()),
);

/** Any JSON value, with nasty strings as keys and values and nasty numbers. */
export const nastyJson: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    nastyNumber,
    nastyString(),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(nastyString(6), tie("value"), { maxKeys: 4 }),
  ),
})).value;

/** A payload: a valid small object, a nasty object, a deep one, or not an object at all. */
export const payload: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant({ message_ref: "s3://mail/1", version: 1 }),
  fc.dictionary(nastyString(6), nastyJson, { maxKeys: 4 }),
  fc.record({ ref: nastyString() }),
  fc
    .tuple(fc.constantFrom(20, 32, 33, 64, 65, 200, 5000, 20_000), fc.constantFrom<"array" | "object">("array", "object"))
    .map(([depth, kind]) => ({ deep: new DeepJson(depth, kind) })),
  nastyJson,
);

/** Either a valid value or a hostile one of any type. */
const orNasty = <T>(valid: fc.Arbitrary<T>, nasty: fc.Arbitrary<unknown> = nastyJson): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 3, arbitrary: valid }, { weight: 2, arbitrary: nasty });

/** A job.v1 enqueue request for `jobTypes` (of the key's tenant), each field valid or hostile. */
export const enqueueRequest = (jobTypes: string[], tenants: string[]): fc.Arbitrary<Record<string, unknown>> =>
  fc
    .record(
      {
        job_type: orNasty(fc.constantFrom(...jobTypes), nastyString()),
        tenant_id: orNasty(fc.constantFrom(...tenants), nastyString()),
        payload,
        priority: orNasty(fc.integer({ min: 0, max: 100 }), nastyNumber),
        idempotency_key: orNasty(fc.uuid(), nastyString()),
        max_attempts: orNasty(fc.integer({ min: 1, max: 10 }), nastyNumber),
        timeout_s: orNasty(fc.integer({ min: 1, max: 600 }), nastyNumber),
        not_before: orNasty(oddDate),
        deadline_at: orNasty(oddDate),
        trace_id: orNasty(fc.string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: 32, maxLength: 32 }), nastyString()),
      },
      { requiredKeys: [] },
    )
    // Required fields are present more often than not (most requests get past the shape check),
    // and now and then a field the contract does not have.
    .chain((r) =>
      fc.tuple(fc.nat(9), fc.uuid(), nastyJson).map(([dice, key, extra]) => ({
        ...(dice < 7 ? { job_type: jobTypes[0], payload: {}, idempotency_key: key } : {}),
        ...r,
        ...(dice === 9 ? { queue_id: extra } : {}),
      })),
    );

/** A job id: one of `real`, a random uuid, or anything else. */
export const jobId = (real: string[]): fc.Arbitrary<unknown> => fc.oneof(fc.constantFrom(...real), fc.uuid(), nastyString(), nastyJson);

/**
 * A cheap fingerprint of every table producer and console input may change: per table, its row
 * count and the sum of a hash of each whole row (no sort, one pass). Equal before and after ⇔
 * nothing was inserted, deleted or updated (up to a 64-bit hash collision).
 */
export const fingerprint = async (pool: pg.Pool): Promise<Record<string, string>> => {
  const tables = [
    "jobs",
    "finished_jobs",
    "idempotency_keys",
    "job_events",
    "audit_log",
    "dlq_groups",
    "dlq_events",
    "dlq_job_triage",
    "dlq_reason_codes",
  ] as const;
  const { rows } = await pool.query<Record<string, string>>(
    `SELECT ${tables.map((t) => `(SELECT count(*) || ':' || coalesce(sum(hashtextextended(x::text, 0)), 0) FROM ${t} x) AS ${t}`).join(", ")}`,
  );
  return rows[0]!;
};

/** A reply as the test saw it: status and raw body text (not every body is JSON). */
export type RawReply = { status: number; text: string };

/**
 * Calls a procedure over HTTP as producers and the console's pages do: a query by GET with
 * `?input=`, a mutation by POST; the input is written with `toJsonText` (so RawNumber and DeepJson
 * go out verbatim). Same-origin JSON, so console mutations pass the CSRF check.
 */
export const callProcedure = async (origin: string, path: string, type: "query" | "mutation", input: unknown, key?: string): Promise<RawReply> => {
  const headers: Record<string, string> = { "content-type": "application/json", origin };
  if (key) headers.authorization = `Bearer ${key}`;
  const body = toJsonText(input);
  const res =
    type === "query"
      ? await fetch(`${origin}/api/trpc/${path}?input=${encodeURIComponent(body)}`, { headers })
      : await fetch(`${origin}/api/trpc/${path}`, { method: "POST", headers, body });
  return { status: res.status, text: await res.text() };
};
