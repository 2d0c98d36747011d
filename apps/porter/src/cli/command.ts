import type { CliDatabase } from "./database";
import type { CliEnv } from "./env";
import type { Output } from "./output";

/** What a command gets to work with. */
export type CommandContext = {
  out: Output;
  env: CliEnv;
  /** `cli:<os user>`, recorded in the audit log. */
  actor: string;
  /** Opens the database as the runtime role on first use; the CLI closes it when the command ends. */
  db: () => Promise<CliDatabase>;
  /** The same database as the owner (DATABASE_URL's user): for `migrate` only. */
  ownerDb: () => Promise<CliDatabase>;
};

/** One CLI command, e.g. `keys create`. */
export type Command = {
  /** One or two words: `migrate`, `keys create`. */
  name: string;
  /** One line for the command list. */
  summary: string;
  /** Full `--help` text: usage, options, examples. */
  help: string;
  /** Runs with the arguments after the command's name; returns the exit code (default 0). */
  run: (ctx: CommandContext, argv: string[]) => Promise<number> | Promise<void>;
};

/** Help text with a usage line, a description and an options block, in the house layout. */
export const helpText = (usage: string, description: string, options: Array<[string, string]> = []): string => {
  const all: Array<[string, string]> = [...options, ["--json", "print one JSON object (the last line of stdout)"], ["-h, --help", "show this help"]];
  const width = Math.max(...all.map(([flag]) => flag.length));
  return [`Usage: npm run porter -- ${usage}`, "", description, "", "Options:", ...all.map(([flag, text]) => `  ${flag.padEnd(width)}  ${text}`)].join("\n");
};
