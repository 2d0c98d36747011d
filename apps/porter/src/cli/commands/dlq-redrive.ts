import { setTimeout as sleep } from "node:timers/promises";
import { AppError, JOB_ERROR_CODE_NAMES } from "@porter/contracts";
import {
  abortRedrive,
  advanceRedrive,
  createRedrive,
  DEFAULT_REDRIVE_RATE_PER_S,
  getRedrive,
  listRedrives,
  planRedrive,
  REDRIVE_SKIP_REASONS,
  type RedriveSelection,
  type RedriveView,
} from "@porter/core";
import { isoOption, jobIdArg } from "../args";
import { type Command, defineCommand } from "../command";
import { UsageError } from "../errors";

/** `text` broken at spaces into lines of at most `width` characters, each indented. */
const wrap = (text: string, width: number, indent: string): string => {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line && indent.length + line.length + 1 + word.length > width) {
      lines.push(indent + line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(indent + line);
  return lines.join("\n");
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const redriveIdArg = (cmd: string, value: string): string => {
  if (!UUID.test(value)) throw new UsageError(`${cmd}: "${value}" is not a redrive id (a UUID)`);
  return value.toLowerCase();
};

/** How long a --watch waits without progress before it says who moves redrives. */
const STALL_HINT_MS = 15_000;

const rateOption = (cmd: string, value: string | undefined): number => {
  if (value === undefined) return DEFAULT_REDRIVE_RATE_PER_S;
  const n = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value.trim()) || !(n >= 0.1 && n <= 10_000))
    throw new UsageError(`${cmd}: --rate must be a number of jobs per second from 0.1 to 10000, got "${value}"`);
  return n;
};

/** One line of progress: done of total, redriven, skipped by reason, ETA. */
export const progressLine = (r: RedriveView): string => {
  const skipped = REDRIVE_SKIP_REASONS.reduce((n, k) => n + r.skipped[k], 0);
  const reasons = REDRIVE_SKIP_REASONS.filter((k) => r.skipped[k] > 0).map((k) => `${k} ${r.skipped[k]}`);
  const eta = r.eta_s === null ? "" : `, ETA ${r.eta_s} s`;
  return (
    `${r.redrive_id} ${r.status}: ${r.redriven + skipped} of ${r.total} done (${Math.round(r.progress * 100)}%), ${r.redriven} redriven, `
    + `${skipped} skipped${reasons.length ? ` (${reasons.join(", ")})` : ""} at ${r.rate_per_s}/s${eta}`
  );
};

const REDRIVE_OPTIONS = {
  group: { type: "string", arg: "<id>", help: "the dead jobs of this failure group (`porter dlq groups`)" },
  queue: { type: "string", arg: "<id>", help: "filter: DEAD jobs of this queue" },
  "job-type": { type: "string", arg: "<type>", help: "filter: of this job type" },
  tenant: { type: "string", arg: "<id>", help: "filter: of this tenant" },
  "error-code": { type: "string", arg: "<code>", help: "filter: whose error has this code (see the list above, or `porter errors`)" },
  from: { type: "string", arg: "<iso>", help: "filter: died at or after (ISO 8601, e.g. 2026-12-01T10:00:00Z)" },
  to: { type: "string", arg: "<iso>", help: "filter: died before" },
  "dry-run": { type: "boolean", help: "report each job's eligibility with counts; change nothing" },
  rate: { type: "string", arg: "<n>", help: `velocity in jobs per second (default ${DEFAULT_REDRIVE_RATE_PER_S}, 0.1 to 10000)` },
  force: { type: "boolean", help: "also redrive permanent errors, partially completed and past-deadline jobs (deadline cleared)" },
  reason: { type: "string", arg: "<text>", help: "recorded in the audit log, the timeline and the group's thread" },
} as const;

/** `dlq redrive` and its alias `redrive`: a durable, rate-limited redrive, or its dry run. */
const redriveCommandNamed = (name: string, aliasNote: string): Command =>
  defineCommand({
    name,
    summary: `safe redrive of DEAD jobs (group, filter or ids) at a velocity, with a dry run${aliasNote ? `; ${aliasNote}` : ""}`,
    usage: `${name} (--group G | --queue Q [--job-type T] [--tenant T] [--error-code C] [--from ISO] [--to ISO] | <job_id>...) [--dry-run] [--rate N] [--force] [--reason TEXT] [--json]`,
    description:
      `${aliasNote ? `${aliasNote[0]!.toUpperCase()}${aliasNote.slice(1)}.\n\n` : ""}`
      + "Redrives the DEAD jobs of a failure group, of a filter, or given by id, frozen at a cutoff (now):\n"
      + "only jobs dead at that time count. Each job is eligible, or skipped because its deadline passed\n"
      + "(expired), it recorded effects (partial), its error class is permanent (invalid input, permission,\n"
      + "policy), its tenant's backlog is full (over_quota), or it is no longer dead or is in another running\n"
      + "redrive (already). --force lets expired, partial and permanent jobs through, never the other two.\n\n"
      + "--dry-run prints the counts and the eligible ids and changes nothing:\n"
      + '  {"eligible":n,"skipped":{"expired":n,"partial":n,"permanent":n,"over_quota":n,"already":n},"job_ids":[...]}\n'
      + "Otherwise a durable redrive is created and its first batch moved at once; the workers' maintenance\n"
      + "leader moves the rest at --rate jobs per second, in batches, resuming after a crash without\n"
      + 'redriving a job twice: {"redrive_id","status","total"}. Follow it with `porter dlq redrives <id> --watch`,\n'
      + "stop it with `porter dlq abort <id>`. Each redriven job gets a `redriven` timeline event (with the\n"
      + "redrive_id and the attempts before it) and an audit row.\n\n"
      + "Error codes Porter records (`porter errors` says what each means; handlers may add their own):\n"
      + wrap(JOB_ERROR_CODE_NAMES.join(", "), 96, "  "),
    options: REDRIVE_OPTIONS,
    positionals: "many",
    run: async (ctx, { cmd, values, positionals }) => {
      const filter = {
        ...(values.queue ? { queue_id: values.queue } : {}),
        ...(values["job-type"] ? { job_type: values["job-type"] } : {}),
        ...(values.tenant ? { tenant_id: values.tenant } : {}),
        ...(values["error-code"] ? { error_code: values["error-code"] } : {}),
        ...(values.from ? { from: isoOption(cmd, "from", values.from) } : {}),
        ...(values.to ? { to: isoOption(cmd, "to", values.to) } : {}),
      };
      const kinds = [values.group !== undefined, Object.keys(filter).length > 0, positionals.length > 0].filter(Boolean).length;
      if (kinds !== 1) throw new UsageError(`${cmd}: give exactly one of --group, a filter (--queue, --job-type, …) or job ids (see ${cmd} --help)`);
      if (positionals.length > 10_000) throw new UsageError(`${cmd}: at most 10000 job ids at a time (use a filter or a group)`);
      if (values.group !== undefined && !/^[1-9][0-9]{0,17}$/.test(values.group))
        throw new UsageError(`${cmd}: --group must be a failure group id (a positive integer)`);
      const reason = values.reason?.trim();
      if (reason !== undefined && reason.length > 500) throw new UsageError(`${cmd}: --reason must be at most 500 characters`);
      const selection: RedriveSelection =
        values.group !== undefined ? { group_id: values.group } : positionals.length ? { job_ids: positionals.map((id) => jobIdArg(cmd, id)) } : { filter };
      const rate = rateOption(cmd, values.rate);
      const force = values.force ?? false;
      const { pool } = await ctx.db();

      if (values["dry-run"]) {
        const plan = await planRedrive(pool, { selection, force });
        const skippedCount = REDRIVE_SKIP_REASONS.reduce((n, k) => n + plan.skipped[k], 0);
        const human = [
          `would redrive ${plan.eligible.length} job(s); skipped ${skippedCount}: ${REDRIVE_SKIP_REASONS.map((k) => `${k} ${plan.skipped[k]}`).join(", ")}`,
          ...plan.jobs.slice(0, 50).map((j) => `  ${j.job_id} ${j.reason ?? "eligible"}`),
          ...(plan.jobs.length > 50 ? [`  … and ${plan.jobs.length - 50} more (--json lists every eligible id)`] : []),
        ];
        if (!force && plan.skipped.expired + plan.skipped.partial + plan.skipped.permanent > 0)
          human.push("expired, partial and permanent jobs are redriven only with --force");
        ctx.out.result({ eligible: plan.eligible.length, skipped: plan.skipped, job_ids: plan.eligible }, human);
        return;
      }
      const created = await createRedrive(pool, { selection, force, ratePerS: rate, actor: ctx.actor, reason: reason ?? null });
      // The first batch at once (the velocity's bucket starts full); the maintenance leader does the rest.
      await advanceRedrive(pool, { id: created.redrive_id });
      const now = (await getRedrive(pool, created.redrive_id))!;
      ctx.out.result({ redrive_id: now.redrive_id, status: now.status, total: now.total }, [
        progressLine(now),
        ...(now.status === "running" ? [`follow it: porter dlq redrives ${now.redrive_id} --watch; stop it: porter dlq abort ${now.redrive_id}`] : []),
      ]);
    },
  });

/** `dlq redrive`. */
export const dlqRedriveCommand = redriveCommandNamed("dlq redrive", "");
/** `redrive`: the same command, kept as an alias. */
export const redriveCommand = redriveCommandNamed("redrive", "an alias of `porter dlq redrive`");

/** `dlq redrives [<id>] [--watch]`: redrives and their progress. */
export const dlqRedrivesCommand = defineCommand({
  name: "dlq redrives",
  summary: "durable redrives and their progress (done of total, skipped, ETA); --watch follows them",
  usage: "dlq redrives [<redrive_id>] [--status S] [--watch] [--json]",
  description:
    "Without an id: the latest redrives, newest first (`--status running|completed|aborted` to narrow).\n"
    + "With one: that redrive. Each with its progress: done of total, redriven, skipped by reason, ETA at its\n"
    + "velocity. --watch prints a progress line every --every seconds until the redrive (or, without an id,\n"
    + "every running one) has finished; with --json the last line is the final JSON object.\n"
    + "The redrives are moved by the workers' maintenance leader: with no worker running they wait.",
  options: {
    status: { type: "string", arg: "<status>", help: "running, completed or aborted (without an id)" },
    watch: { type: "boolean", help: "print progress lines until finished" },
    every: { type: "string", arg: "<s>", help: "seconds between --watch lines (default 1)" },
    limit: { type: "string", arg: "<n>", help: "at most this many redrives (without an id; default 20)" },
  },
  positionals: "many",
  run: async (ctx, { cmd, values, positionals }) => {
    if (positionals.length > 1) throw new UsageError(`${cmd}: at most one redrive id`);
    const id = positionals[0] === undefined ? undefined : redriveIdArg(cmd, positionals[0]);
    const status = values.status;
    if (status !== undefined && !["running", "completed", "aborted"].includes(status))
      throw new UsageError(`${cmd}: --status must be running, completed or aborted`);
    const every = values.every === undefined ? 1 : Number(values.every);
    if (!(every >= 0.1 && every <= 60)) throw new UsageError(`${cmd}: --every must be from 0.1 to 60 seconds`);
    const limit = values.limit === undefined ? 20 : Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw new UsageError(`${cmd}: --limit must be an integer from 1 to 200`);
    const { pool } = await ctx.db();
    const say = (line: string) => (ctx.out.isJson ? ctx.out.progress(line) : ctx.out.line(line));
    // A watch that sees nothing move for a while says once who moves redrives.
    let lastDone = -1;
    let lastMoveAt = Date.now();
    let isHinted = false;
    const stalled = (views: RedriveView[]) => {
      const done = views.reduce((n, r) => n + r.redriven + REDRIVE_SKIP_REASONS.reduce((m, k) => m + r.skipped[k], 0), 0);
      if (done !== lastDone) {
        lastDone = done;
        lastMoveAt = Date.now();
      } else if (!isHinted && Date.now() - lastMoveAt >= STALL_HINT_MS) {
        isHinted = true;
        ctx.out.progress(
          `no progress for ${STALL_HINT_MS / 1000} s: redrives are moved by a worker's maintenance leader — is a worker running (npm run worker -- --pool <name>)?`,
        );
      }
    };

    if (id) {
      let r = await getRedrive(pool, id);
      if (!r) throw new AppError("NOT_FOUND", { message: `no redrive ${id}` });
      while (values.watch && r.status === "running") {
        say(progressLine(r));
        stalled([r]);
        await sleep(every * 1000);
        r = (await getRedrive(pool, id))!;
      }
      ctx.out.result(r, progressLine(r));
      return;
    }
    const list = async () => (await listRedrives(pool, { status: status as "running" | "completed" | "aborted" | undefined, limit })).redrives;
    let redrives = await list();
    if (values.watch) {
      const watched = redrives.filter((r) => r.status === "running").map((r) => r.redrive_id);
      for (;;) {
        const running = redrives.filter((r) => watched.includes(r.redrive_id) && r.status === "running");
        if (running.length === 0) break;
        for (const r of running) say(progressLine(r));
        stalled(running);
        await sleep(every * 1000);
        redrives = await Promise.all(redrives.map(async (r) => (watched.includes(r.redrive_id) ? ((await getRedrive(pool, r.redrive_id)) ?? r) : r)));
      }
    }
    ctx.out.result({ redrives }, redrives.length ? redrives.map(progressLine) : ["no redrives"]);
  },
});

/** `dlq abort <id>`: stops a running redrive within one batch. */
export const dlqAbortCommand = defineCommand({
  name: "dlq abort",
  summary: "abort a running redrive (it stops within one batch); audited",
  usage: "dlq abort <redrive_id> [--reason TEXT] [--json]",
  description:
    "Aborts a running redrive: the batch in flight finishes, no other starts. Jobs already redriven stay\n"
    + "redriven; the pending ones stay DEAD. A finished redrive cannot be aborted (exit 1, CONFLICT).\n"
    + "Audited as `redrive.abort` with the CLI's actor (cli:<user>).",
  options: { reason: { type: "string", arg: "<text>", help: "recorded in the audit log" } },
  positionals: { exactlyOne: "redrive id" },
  run: async (ctx, { cmd, values, positionals }) => {
    const id = redriveIdArg(cmd, positionals[0]);
    const reason = values.reason?.trim();
    if (reason !== undefined && reason.length > 500) throw new UsageError(`${cmd}: --reason must be at most 500 characters`);
    const { pool } = await ctx.db();
    const r = await abortRedrive(pool, { id, actor: ctx.actor, reason: reason ?? null });
    ctx.out.result(r, progressLine(r));
  },
});
