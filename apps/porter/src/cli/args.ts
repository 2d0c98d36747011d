import { type ParseArgsConfig, parseArgs } from "node:util";
import { UsageError } from "./errors";

type Options = NonNullable<ParseArgsConfig["options"]>;

/** Options every command accepts. */
export const COMMON_OPTIONS = {
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const satisfies Options;

/**
 * `node:util` parseArgs in strict mode, with its errors turned into usage errors (exit 2) that
 * name the command.
 */
export const parseCommandArgs = <const O extends Options>(command: string, argv: string[], options: O, allowPositionals = false) => {
  try {
    return parseArgs({ args: argv, options: { ...COMMON_OPTIONS, ...options }, allowPositionals, strict: true });
  } catch (error) {
    const message = error instanceof Error ? error.message.replace(/\. To specify a positional argument.*$/s, "") : String(error);
    throw new UsageError(`${command}: ${message} (see ${command} --help)`);
  }
};

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
