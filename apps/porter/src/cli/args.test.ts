import { AppError } from "@porter/contracts";
import { describe, expect, it } from "vitest";
import { intOption, isoOption, jobIdArg, listOption, parseCommandArgs } from "./args";
import { type CommandContext, defineCommand } from "./command";
import { describeError, UsageError } from "./errors";
import { formatTable } from "./output";

describe("CLI arguments", () => {
  it("parses lists given comma-separated and repeated, trimmed and de-duplicated", () => {
    expect(listOption(undefined)).toEqual([]);
    expect(listOption("a, b,,a")).toEqual(["a", "b"]);
    expect(listOption(["a,b", "c"])).toEqual(["a", "b", "c"]);
  });

  it("accepts integers within bounds and refuses anything else as a usage error", () => {
    expect(intOption("enqueue", "priority", undefined, { min: 0, max: 100 })).toBeUndefined();
    expect(intOption("enqueue", "priority", "100", { min: 0, max: 100 })).toBe(100);
    for (const bad of ["101", "-1", "1.5", "high", "", "1e2"]) {
      expect(() => intOption("enqueue", "priority", bad, { min: 0, max: 100 })).toThrow(UsageError);
    }
  });

  it("accepts ISO timestamps with a zone only, normalised to UTC", () => {
    expect(isoOption("enqueue", "deadline-at", "2026-12-01T10:00:00+02:00")).toBe("2026-12-01T08:00:00.000Z");
    expect(isoOption("enqueue", "deadline-at", "2026-12-01T10:00Z")).toBe("2026-12-01T10:00:00.000Z");
    expect(() => isoOption("enqueue", "deadline-at", "2026-12-01 10:00")).toThrow(/ISO 8601/);
    expect(() => isoOption("enqueue", "deadline-at", "tomorrow")).toThrow(UsageError);
  });

  it("checks job ids are UUIDs", () => {
    expect(jobIdArg("jobs get", "0E0B5A3C-0000-4000-8000-000000000000")).toBe("0e0b5a3c-0000-4000-8000-000000000000");
    expect(() => jobIdArg("jobs get", "42")).toThrow('"42" is not a job id');
  });

  it("turns parseArgs errors into usage errors naming the command", () => {
    expect(() => parseCommandArgs("pause", ["--nope"], {})).toThrow(/^pause: Unknown option '--nope' \(see pause --help\)$/);
    expect(() => parseCommandArgs("pause", ["q1"], {})).toThrow(UsageError);
    expect(parseCommandArgs("pause", ["q1", "--json"], {}, true)).toMatchObject({ values: { json: true }, positionals: ["q1"] });
  });
});

describe("defineCommand", () => {
  const seen: unknown[] = [];
  const command = defineCommand({
    name: "demo run",
    summary: "a command for the test",
    usage: "demo run <id> --name N [--json]",
    description: "Does nothing.",
    options: {
      name: { type: "string", arg: "<name>", help: "a name (required)", required: true },
      tag: { type: "string", multiple: true, arg: "<tags>", help: "tags; repeated" },
      force: { type: "boolean", help: "force it" },
    },
    positionals: { exactlyOne: "demo id" },
    run: async (_ctx, args) => {
      seen.push(args);
      return 3;
    },
  });
  const run = (...argv: string[]) => command.run({} as CommandContext, argv);

  it("derives the --help options block from the declaration, then --json and -h", () => {
    expect(command.help).toBe(
      [
        "Usage: npm run porter -- demo run <id> --name N [--json]",
        "",
        "Does nothing.",
        "",
        "Options:",
        "  --name <name>  a name (required)",
        "  --tag <tags>   tags; repeated",
        "  --force        force it",
        "  --json         print one JSON object (the last line of stdout)",
        "  -h, --help     show this help",
      ].join("\n"),
    );
  });

  it("parses what it declares and hands run the values, the positionals and its name", async () => {
    expect(await run("x1", "--name", "n", "--tag", "a", "--tag", "b", "--force", "--json")).toBe(3);
    expect(seen.at(-1)).toMatchObject({ cmd: "demo run", values: { name: "n", tag: ["a", "b"], force: true, json: true }, positionals: ["x1"] });
  });

  it("refuses a missing or empty required option, an undeclared one and a wrong number of positionals, before run", async () => {
    const before = seen.length;
    await expect(run("x1")).rejects.toThrow(/^demo run: --name is required \(see demo run --help\)$/);
    await expect(run("x1", "--name", "")).rejects.toThrow("--name is required");
    await expect(run("x1", "--name", "n", "--nope")).rejects.toThrow(/^demo run: Unknown option '--nope' \(see demo run --help\)$/);
    await expect(run("--name", "n")).rejects.toThrow(/^demo run: expected exactly one demo id \(see demo run --help\)$/);
    await expect(run("x1", "x2", "--name", "n")).rejects.toThrow(UsageError);
    expect(seen.length).toBe(before);
  });

  it("takes no positionals unless it declares them", async () => {
    const bare = defineCommand({ name: "bare", summary: "", usage: "bare", description: "", run: async () => undefined });
    await expect(bare.run({} as CommandContext, ["extra"])).rejects.toThrow(
      /^bare: Unexpected argument 'extra'\. This command does not take positional arguments \(see bare --help\)$/,
    );
    expect(await bare.run({} as CommandContext, ["--json"])).toBe(0);
  });
});

describe("CLI errors", () => {
  it("maps usage and invalid input to exit 2, everything else to exit 1", () => {
    expect(describeError(new UsageError("bad"))).toEqual({ code: "BAD_REQUEST", message: "bad", exitCode: 2 });
    expect(describeError(new AppError("BAD_REQUEST", { message: "unknown job_type" }))).toMatchObject({ exitCode: 2 });
    expect(describeError(new AppError("NOT_FOUND", { message: "gone" }))).toEqual({ code: "NOT_FOUND", message: "gone", exitCode: 1 });
    expect(describeError(Object.assign(new Error('relation "jobs" does not exist'), { code: "42P01" }))).toMatchObject({ code: "NOT_MIGRATED", exitCode: 1 });
    expect(describeError(new Error("boom"))).toEqual({ code: "INTERNAL", message: "boom", exitCode: 1 });
  });
});

describe("formatTable", () => {
  it("pads every column but the last", () => {
    expect(
      formatTable(
        [
          ["a", "bb", "c"],
          ["ccc", "d", ""],
        ],
        "  ",
      ),
    ).toEqual(["  a    bb  c", "  ccc  d"]);
  });
});
