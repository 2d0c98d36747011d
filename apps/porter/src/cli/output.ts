import { format } from "node:util";

/** Where a command writes: results to stdout, progress and logs to stderr. */
export type Output = {
  /** `--json`: stdout carries exactly one JSON object, on its last line. */
  readonly isJson: boolean;
  /** A progress or log line on stderr (stdout stays parseable). */
  progress: (message: string, ...args: unknown[]) => void;
  /** A line of human output on stdout; suppressed with `--json`. */
  line: (message?: string) => void;
  /** The command's result: the JSON object with `--json`, else the human lines given. */
  result: (json: unknown, human?: string | string[]) => void;
};

export type OutputStreams = { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream };

/** Creates the output of one CLI run. */
export const createOutput = (isJson: boolean, streams: OutputStreams = { stdout: process.stdout, stderr: process.stderr }): Output => ({
  isJson,
  progress: (message, ...args) => streams.stderr.write(`${format(message, ...args)}\n`),
  line: (message = "") => {
    if (!isJson) streams.stdout.write(`${message}\n`);
  },
  result: (json, human) => {
    if (isJson) streams.stdout.write(`${JSON.stringify(json)}\n`);
    else if (human !== undefined) streams.stdout.write(`${(Array.isArray(human) ? human : [human]).join("\n")}\n`);
  },
});

/** Renders rows as left-aligned columns (the first row is usually a header). */
export const formatTable = (rows: ReadonlyArray<ReadonlyArray<string>>, indent = ""): string[] => {
  const widths: number[] = [];
  for (const row of rows) {
    for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i] ?? 0, cell.length);
  }
  return rows.map(
    (row) =>
      indent
      + row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join("  ")
        .trimEnd(),
  );
};
