import { userInfo } from "node:os";
import type { Command, CommandContext } from "./command";
import { dlqAlertsCommand } from "./commands/dlq-alerts";
import { dlqAssignCommand, dlqGroupsCommand, dlqReasonsCommand, dlqShowCommand } from "./commands/dlq-groups";
import { dlqAbortCommand, dlqRedriveCommand, dlqRedrivesCommand, redriveCommand } from "./commands/dlq-redrive";
import { drainCommand } from "./commands/drain";
import { enqueueCommand } from "./commands/enqueue";
import { errorsCommand } from "./commands/errors";
import { queuesCommand, workersCommand } from "./commands/fleet";
import { jobsCancelCommand, jobsRetryCommand } from "./commands/job-actions";
import { jobsGetCommand } from "./commands/jobs";
import { jobsListCommand } from "./commands/jobs-list";
import { keysCreateCommand, keysRevokeCommand } from "./commands/keys";
import { migrateCommand } from "./commands/migrate";
import { pauseCommand, resumeCommand } from "./commands/queue-control";
import { seedCommand } from "./commands/seed";
import { statsCommand } from "./commands/stats";
import { tenantsLinkCommand, tenantsLinksCommand, tenantsRevokeLinkCommand } from "./commands/status-links";
import { usersCreateCommand } from "./commands/users";
import { WEBHOOK_COMMANDS } from "./commands/webhooks";
import { type CliDatabase, openCliDatabase } from "./database";
import { parseCliEnv } from "./env";
import { describeError } from "./errors";
import { createOutput, type OutputStreams } from "./output";

/** Every command of `npm run porter`, in the order `--help` lists them. */
export const COMMANDS: readonly Command[] = [
  migrateCommand,
  seedCommand,
  keysCreateCommand,
  keysRevokeCommand,
  enqueueCommand,
  jobsListCommand,
  jobsGetCommand,
  jobsCancelCommand,
  jobsRetryCommand,
  dlqGroupsCommand,
  dlqShowCommand,
  dlqAssignCommand,
  dlqRedriveCommand,
  dlqRedrivesCommand,
  dlqAbortCommand,
  dlqAlertsCommand,
  dlqReasonsCommand,
  redriveCommand,
  errorsCommand,
  pauseCommand,
  resumeCommand,
  drainCommand,
  queuesCommand,
  workersCommand,
  statsCommand,
  usersCreateCommand,
  tenantsLinkCommand,
  tenantsLinksCommand,
  tenantsRevokeLinkCommand,
  ...WEBHOOK_COMMANDS,
];

const GROUPS = new Set(COMMANDS.filter((c) => c.name.includes(" ")).map((c) => c.name.split(" ")[0]!));

const globalHelp = (): string => {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    "Usage: npm run porter -- <command> [options]",
    "",
    "Porter's operations CLI. Works straight on the database: DATABASE_URL, or when it is unset the",
    "embedded PostgreSQL under .porter/pg (the one of a running `npm start`, or started for the command).",
    "`migrate` connects as DATABASE_URL's user (the owner); every other command as the runtime role",
    '(PORTER_APP_DATABASE_URL, or porter_app with PORTER_APP_PASSWORD; see README "Configuration").',
    "",
    "Commands:",
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    "",
    "Every command takes --help, and --json to print one JSON object as the last line of stdout.",
    "Exit codes: 0 done, 1 failed (e.g. not found, conflict, timeout), 2 invalid usage or input.",
  ].join("\n");
};

/** The OS user, for audit actors (`cli:<user>`). */
export const cliActor = (): string => {
  try {
    return `cli:${userInfo().username}`;
  } catch {
    return `cli:${process.env.USER ?? "unknown"}`;
  }
};

const isHelpFlag = (arg: string) => arg === "--help" || arg === "-h";

/**
 * Runs one CLI invocation and returns its exit code. Results go to stdout (one JSON object with
 * `--json`), progress to stderr; errors are a message on stderr (and `{"error": {code, message}}`
 * on stdout with `--json`), exit 2 for invalid usage or input, 1 otherwise.
 */
export const runCli = async (argv: string[], streams?: OutputStreams): Promise<number> => {
  const out = createOutput(argv.includes("--json"), streams);
  let database: Promise<CliDatabase> | undefined;
  let ownerDatabase: Promise<CliDatabase> | undefined;
  try {
    const [first, second] = argv;
    if (first === undefined || isHelpFlag(first) || first === "help") {
      // Asked for: stdout. A bare `porter` is a usage error: the help goes to stderr.
      if (first === undefined) out.progress(globalHelp());
      else out.line(globalHelp());
      if (out.isJson) out.result({ commands: COMMANDS.map((c) => ({ name: c.name, summary: c.summary })) });
      return first === undefined ? 2 : 0;
    }
    const isGroup = GROUPS.has(first);
    const name = isGroup && second && !second.startsWith("-") ? `${first} ${second}` : first;
    const command = COMMANDS.find((c) => c.name === name);
    if (!command) {
      const inGroup = COMMANDS.filter((c) => c.name.startsWith(`${first} `)).map((c) => c.name);
      if (isGroup && (second === undefined || isHelpFlag(second))) {
        (second === undefined ? out.progress : out.line)(
          `Usage: npm run porter -- ${first} <${inGroup.map((c) => c.split(" ")[1]).join("|")}> [options]\n\nCommands:\n${inGroup.map((c) => `  ${c}`).join("\n")}`,
        );
        return second === undefined ? 2 : 0;
      }
      throw Object.assign(new Error(), { usage: `unknown command "${name}"; commands: ${COMMANDS.map((c) => c.name).join(", ")}` });
    }
    const rest = argv.slice(name.split(" ").length);
    if (rest.some(isHelpFlag)) {
      out.line(command.help);
      if (out.isJson) out.result({ command: command.name, help: command.help });
      return 0;
    }
    const env = parseCliEnv();
    const ctx: CommandContext = {
      out,
      env,
      actor: cliActor(),
      db: () => (database ??= openCliDatabase({ env, as: "runtime", log: (m) => out.progress(m) })),
      ownerDb: () => (ownerDatabase ??= openCliDatabase({ env, as: "owner", log: (m) => out.progress(m) })),
    };
    return (await command.run(ctx, rest)) ?? 0;
  } catch (error) {
    const usage = (error as { usage?: string }).usage;
    const report = usage ? { code: "BAD_REQUEST", message: usage, exitCode: 2 as const } : describeError(error);
    out.progress(`error: ${report.message}`);
    if (report.code === "INTERNAL" && process.env.PORTER_DEBUG && error instanceof Error && error.stack) out.progress(error.stack);
    if (out.isJson)
      out.result({ error: { code: report.code, message: report.message, ...("details" in report && report.details ? { details: report.details } : {}) } });
    return report.exitCode;
  } finally {
    if (database) await database.then((db) => db.close()).catch(() => undefined);
    if (ownerDatabase) await ownerDatabase.then((db) => db.close()).catch(() => undefined);
  }
};
