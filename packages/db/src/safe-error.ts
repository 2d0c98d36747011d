// What of an error may be written to a log. PostgreSQL errors carry the caller's data: `detail`
// ("Failing row contains (…)", "Key (k)=(v) already exists"), `where` ("JSON data, line 1: {…}",
// "unnamed portal parameter $1 = '…'"), `hint`, `internalQuery`, and for data exceptions the
// value itself in the message (`invalid input syntax for type uuid: "…"`). Payloads, idempotency
// keys and passwords reach the database as parameters, so none of that may reach a log line.
// An allow-list, not a deny-list: a field a driver adds tomorrow stays out until it is listed.

/** Fields kept from any error: the kind of failure, never the data it failed on. */
const KEPT_FIELDS = [
  "code",
  // PostgreSQL (pg's DatabaseError): where in the server and on which object, not with which value.
  "severity",
  "routine",
  "schema",
  "table",
  "column",
  "dataType",
  "constraint",
  // Node system errors (ECONNREFUSED …).
  "errno",
  "syscall",
  "address",
  "port",
  // Prisma and tRPC.
  "clientVersion",
  "retryAfterS",
] as const;

/** Fields an error has but a log never gets (listed by name in `omitted`, so one knows they exist). */
const SKIPPED_FIELDS = new Set(["name", "message", "stack", "cause", "errors", "length"]);

/**
 * SQLSTATE classes whose messages name only objects of Porter's own SQL (connection, syntax and
 * access rules, resources, transaction state, system errors). Every other class — data
 * exceptions (22), integrity violations (23), trigger and PL/pgSQL errors (P0) … — may quote the
 * offending value, so its quoted parts are masked.
 */
const NAME_ONLY_CLASSES = new Set(["08", "0A", "25", "28", "3D", "3F", "40", "42", "53", "55", "57", "58", "XX"]);

const MAX_DEPTH = 5;
const MAX_AGGREGATED = 10;
const SAFE = Symbol.for("porter.safeError");

/** An error as a log carries it. */
export type SafeError = {
  type: string;
  message: string;
  stack?: string;
  cause?: SafeError | string;
  errors?: SafeError[];
  omitted?: string[];
  [field: string]: unknown;
};

type ErrorLike = Error & Record<string, unknown>;

const isErrorLike = (value: unknown): value is ErrorLike =>
  typeof value === "object" && value !== null && typeof (value as { message?: unknown }).message === "string";

/** A PostgreSQL error as node-postgres raises it (DatabaseError; duck-typed across copies of pg). */
const isPostgresError = (error: unknown): error is ErrorLike & { code: string; severity: string } =>
  isErrorLike(error) && typeof error.severity === "string" && typeof error.code === "string" && /^[0-9A-Z]{5}$/.test(error.code);

/** Whether this object is already the output of `serializeError` (serializing twice is a no-op). */
export const isSafeError = (value: unknown): value is SafeError =>
  typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[SAFE] === true;

/**
 * Masks every double-quoted part of `message` that is not one of the error's own object names
 * (`"jobs_pkey"` stays, `"SECRET"` goes).
 */
const maskQuoted = (message: string, names: Set<string>): string =>
  message.replace(/"((?:[^"\\]|\\.)*)"/g, (whole, inner: string) => (names.has(inner) ? whole : `"[redacted]"`));

/**
 * The message of `error` that may be logged: a PostgreSQL error's message loses quoted values
 * unless its SQLSTATE class names only objects; Prisma's (which embed the driver's) likewise.
 * Other errors keep theirs.
 */
export const safeErrorMessage = (error: unknown): string => {
  if (!isErrorLike(error)) return String(error);
  const names = new Set(["schema", "table", "column", "dataType", "constraint"].map((k) => error[k]).filter((v): v is string => typeof v === "string"));
  if (isPostgresError(error)) {
    return NAME_ONLY_CLASSES.has(error.code.slice(0, 2)) ? error.message : maskQuoted(error.message, names);
  }
  if (typeof error.name === "string" && error.name.startsWith("PrismaClient")) return maskQuoted(error.message, names);
  return error.message;
};

/**
 * Serializes an error for a log line: type, (safe) message, stack, the allow-listed fields, its
 * cause chain and aggregated errors the same way, and the names of the fields left out. Never
 * `detail`, `where`, `hint`, `internalQuery`, parameters, `meta` or an AppError's `details`.
 * Anything that is not error-like is returned unchanged.
 */
export const serializeError = (error: unknown, depth = 0): unknown => {
  if (!isErrorLike(error) || isSafeError(error)) return error;
  const message = safeErrorMessage(error);
  const constructorName = (error as { constructor?: { name?: unknown } }).constructor?.name;
  const out: SafeError = {
    type: typeof constructorName === "string" && constructorName !== "Object" ? constructorName : String(error.name ?? "Error"),
    message,
  };
  Object.defineProperty(out, SAFE, { value: true, enumerable: false });
  if (typeof error.stack === "string") {
    // V8 starts the stack with `name: message`: the raw message must not come back that way.
    out.stack = message === error.message ? error.stack : error.stack.split(error.message).join(message);
  }
  for (const field of KEPT_FIELDS) {
    const value = error[field];
    if (typeof value === "string" || typeof value === "number") out[field] = value;
  }
  const omitted = Object.keys(error).filter((k) => !SKIPPED_FIELDS.has(k) && !(KEPT_FIELDS as readonly string[]).includes(k) && error[k] !== undefined);
  if (omitted.length > 0) out.omitted = omitted;
  if (depth < MAX_DEPTH) {
    const { cause } = error;
    if (cause !== undefined) out.cause = isErrorLike(cause) ? (serializeError(cause, depth + 1) as SafeError) : `[${typeof cause}]`;
    if (Array.isArray(error.errors)) {
      out.errors = error.errors
        .slice(0, MAX_AGGREGATED)
        .map((e) => (isErrorLike(e) ? (serializeError(e, depth + 1) as SafeError) : { type: typeof e, message: "[not an error]" }));
    }
  }
  return out;
};

/**
 * `value` with every error inside it (to a few levels of plain objects and arrays) serialized
 * by `serializeError`: an error logged under any key — `err`, `error`, next-auth's `metadata` —
 * gets the same treatment. Plain data is returned as it is (same object when nothing changed).
 */
export const scrubErrors = (value: unknown, depth = 0): unknown => {
  if ((value instanceof Error || isPostgresError(value)) && !isSafeError(value)) return serializeError(value);
  if (depth >= 4 || typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    let changed = false;
    const next = value.map((item) => {
      const scrubbed = scrubErrors(item, depth + 1);
      if (scrubbed !== item) changed = true;
      return scrubbed;
    });
    return changed ? next : value;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value; // Dates, Buffers, class instances
  let copy: Record<string, unknown> | undefined;
  for (const [key, item] of Object.entries(value)) {
    const scrubbed = scrubErrors(item, depth + 1);
    if (scrubbed === item) continue;
    copy ??= { ...(value as Record<string, unknown>) };
    copy[key] = scrubbed;
  }
  return copy ?? value;
};
