import { AppError } from "@porter/contracts";
import { describe, expect, it } from "vitest";
import { intOption, isoOption, jobIdArg, listOption, parseCommandArgs } from "./args";
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
