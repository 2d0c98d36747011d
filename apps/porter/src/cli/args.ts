import { parseArgs } from "node:util";
import { UsageError } from "./errors";

/**
 * One option of a command, declared once: the parse (node:util parseArgs, strict) and the `--help`
 * line both come from it.
 */
export type OptionSpec = {
  type: "string" | "boolean";
  multiple?: boolean;
  short?: string;
  /** The value's placeholder in `--help`: `--queue <ids>`. */
  arg?: string;
  /** The option's line in `--help`. */
  help: string;
  /** Absent or empty is a usage error naming it; its value is then typed as present. */
  required?: boolean;
};
export type OptionSpecs = Record<string, OptionSpec>;

/** Options every command accepts. */
export const COMMON_OPTIONS = {
  json: { type: "boolean", help: "print one JSON object (the last line of stdout)" },
  help: { type: "boolean", short: "h", help: "show this help" },
} as const satisfies OptionSpecs;

/** What parseArgs returns for these options: its own typing, from the declaration. */
type ParsedValues<O extends OptionSpecs> = ReturnType<typeof parseArgs<{ options: typeof COMMON_OPTIONS & O; strict: true }>>["values"];
type RequiredKeys<O extends OptionSpecs> = { [K in keyof O]: O[K] extends { required: true } ? K : never }[keyof O];
/** The parsed values, options declared `required: true` as present. */
export type OptionValues<O extends OptionSpecs> = ParsedValues<O> & { [K in RequiredKeys<O>]: NonNullable<ParsedValues<O>[K & keyof ParsedValues<O>]> };

/**
 * `node:util` parseArgs in strict mode, with its errors turned into usage errors (exit 2) that
 * name the command, and the options declared `required` checked (in declaration order).
 */
export const parseCommandArgs = <const O extends OptionSpecs>(
  command: string,
  argv: string[],
  options: O,
  allowPositionals = false,
): { values: OptionValues<O>; positionals: string[] } => {
  const all: OptionSpecs = { ...COMMON_OPTIONS, ...options };
  const config = Object.fromEntries(
    Object.entries(all).map(([name, { type, multiple, short }]) => [name, { type, ...(multiple ? { multiple } : {}), ...(short ? { short } : {}) }]),
  );
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({ args: argv, options: config, allowPositionals, strict: true });
  } catch (error) {
    const message = error instanceof Error ? error.message.replace(/\. To specify a positional argument.*$/s, "") : String(error);
    throw new UsageError(`${command}: ${message} (see ${command} --help)`);
  }
  for (const [name, spec] of Object.entries(options)) if (spec.required) required(command, name, parsed.values[name]);
  return parsed as { values: OptionValues<O>; positionals: string[] };
};

/** An option's flag as `--help` shows it: `-h, --help`, `--queue <ids>`. */
export const optionFlag = (name: string, spec: OptionSpec): string => `${spec.short ? `-${spec.short}, ` : ""}--${name}${spec.arg ? ` ${spec.arg}` : ""}`;

/** A required option, or a usage error naming it. */
export const required = <T>(command: string, name: string, value: T | undefined): T => {
  if (value === undefined || value === "") throw new UsageError(`${command}: --${name} is required (see ${command} --help)`);
  return value;
};

/** An integer option within bounds, or undefined when absent. */
export const intOption = (command: string, name: string, value: string | undefined, bounds: { min: number; max: number }): number | undefined => {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^-?\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < bounds.min || n > bounds.max) {
    throw new UsageError(`${command}: --${name} must be an integer from ${bounds.min} to ${bounds.max}, got "${value}"`);
  }
  return n;
};

/** An ISO 8601 timestamp with an offset (`2026-12-01T10:00:00Z`), normalised, or undefined. */
export const isoOption = (command: string, name: string, value: string | undefined): string | undefined => {
  if (value === undefined) return undefined;
  const date = new Date(value);
  if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)$/i.test(value) || Number.isNaN(date.getTime())) {
    throw new UsageError(`${command}: --${name} must be an ISO 8601 timestamp with a zone, e.g. 2026-12-01T10:00:00Z, got "${value}"`);
  }
  return date.toISOString();
};

/** Comma-separated and/or repeated values (`--tenant a,b --tenant c`), trimmed, de-duplicated. */
export const listOption = (value: string | string[] | undefined): string[] => {
  const parts = (Array.isArray(value) ? value : value === undefined ? [] : [value]).flatMap((v) => v.split(","));
  return [...new Set(parts.map((p) => p.trim()).filter((p) => p.length > 0))];
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A job id (UUID), lower-cased, or a usage error. */
export const jobIdArg = (command: string, value: string): string => {
  if (!UUID.test(value)) throw new UsageError(`${command}: "${value}" is not a job id (a UUID)`);
  return value.toLowerCase();
};
