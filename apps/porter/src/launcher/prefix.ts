import { StringDecoder } from "node:string_decoder";

const PINO_LEVELS: Record<number, string> = { 10: "TRACE", 20: "DEBUG", 30: "INFO", 40: "WARN", 50: "ERROR", 60: "FATAL" };
const PINO_HIDDEN = new Set(["level", "time", "msg", "pid", "hostname", "name", "v"]);

/**
 * One line of a child's output for a human: pino JSON lines become `LEVEL message key=value…`;
 * anything else is kept as it is.
 */
export const renderLogLine = (line: string): string => {
  if (!line.startsWith("{")) return line;
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  if (typeof record.level !== "number" || typeof record.msg !== "string") return line;
  const fields = Object.entries(record)
    .filter(([key]) => !PINO_HIDDEN.has(key))
    .map(([key, value]) => `${key}=${typeof value === "string" ? value : JSON.stringify(value)}`);
  return [PINO_LEVELS[record.level] ?? String(record.level), record.msg, ...fields].join(" ");
};

/**
 * Splits a byte stream into lines and hands each (without its newline) to `onLine`; the last
 * partial line is flushed when the stream ends.
 */
export const forEachLine = (stream: NodeJS.ReadableStream, onLine: (line: string) => void): void => {
  const decoder = new StringDecoder("utf8");
  let pending = "";
  stream.on("data", (chunk: Buffer | string) => {
    pending += typeof chunk === "string" ? chunk : decoder.write(chunk);
    let newline = pending.indexOf("\n");
    while (newline >= 0) {
      onLine(pending.slice(0, newline).replace(/\r$/, ""));
      pending = pending.slice(newline + 1);
      newline = pending.indexOf("\n");
    }
  });
  stream.on("end", () => {
    pending += decoder.end();
    if (pending.length > 0) onLine(pending);
    pending = "";
  });
};

const COLOURS = [36, 32, 35, 33, 34, 96, 92, 95];

/** `[name] ` in a stable colour per name when writing to a terminal. */
export const makePrefixer = (isTty: boolean) => {
  const assigned = new Map<string, number>();
  return (name: string): string => {
    if (!isTty) return `[${name}] `;
    if (!assigned.has(name)) assigned.set(name, COLOURS[assigned.size % COLOURS.length]!);
    return `\u001b[${assigned.get(name)}m[${name}]\u001b[0m `;
  };
};
