import { COMMON_OPTIONS, type OptionSpecs, type OptionValues, optionFlag, parseCommandArgs } from "./args";
import type { CliDatabase } from "./database";
import type { CliEnv } from "./env";
import { UsageError } from "./errors";
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

/** Positional arguments a command takes: none (the default), any number, or exactly one (named in the error). */
type Positionals = "many" | { exactlyOne: string } | undefined;

/** What a command's `run` gets besides the context: its name and the parsed arguments. */
export type CommandArgs<O extends OptionSpecs, P extends Positionals> = {
  cmd: string;
  values: OptionValues<O>;
  positionals: P extends { exactlyOne: string } ? [string] : string[];
};

/**
 * A command whose options are declared once (`options`): its `--help` text and its parse (with the
 * typed `values` of node:util parseArgs) both come from the declaration.
 */
export const defineCommand = <const O extends OptionSpecs = Record<never, never>, const P extends Positionals = undefined>(spec: {
  name: string;
  summary: string;
  /** After `npm run porter -- `. */
  usage: string;
  description: string;
  options?: O;
  positionals?: P;
  run: (ctx: CommandContext, args: CommandArgs<O, P>) => Promise<number> | Promise<void>;
}): Command => ({
  name: spec.name,
  summary: spec.summary,
  help: helpText(spec.usage, spec.description, spec.options ?? {}),
  run: async (ctx, argv) => {
    const cmd = spec.name;
    const { values, positionals } = parseCommandArgs(cmd, argv, spec.options ?? ({} as O), spec.positionals !== undefined);
    const one = typeof spec.positionals === "object" ? spec.positionals.exactlyOne : undefined;
    if (one && positionals.length !== 1) throw new UsageError(`${cmd}: expected exactly one ${one} (see ${cmd} --help)`);
    return (await spec.run(ctx, { cmd, values, positionals } as CommandArgs<O, P>)) ?? 0;
  },
});

/** Help text with a usage line, a description and an options block (then the common ones), in the house layout. */
const helpText = (usage: string, description: string, options: OptionSpecs): string => {
  const all = Object.entries({ ...options, ...COMMON_OPTIONS }).map(([name, spec]) => [optionFlag(name, spec), spec.help] as const);
  const width = Math.max(...all.map(([flag]) => flag.length));
  return [`Usage: npm run porter -- ${usage}`, "", description, "", "Options:", ...all.map(([flag, text]) => `  ${flag.padEnd(width)}  ${text}`)].join("\n");
};
