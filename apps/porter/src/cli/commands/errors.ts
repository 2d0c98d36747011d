import { JOB_ERROR_CODE_NAMES, JOB_ERROR_CODES } from "@porter/contracts";
import { defineCommand } from "../command";
import { formatTable } from "../output";

/** `errors`: the job error codes Porter records (the contracts' JOB_ERROR_CODES), for `redrive --error-code`. */
export const errorsCommand = defineCommand({
  name: "errors",
  summary: "list the job error codes (what redrive --error-code matches)",
  usage: "errors [--json]",
  description:
    "Lists the error codes Porter itself records in a failed attempt's or a dead job's error, with\n"
    + "their class and meaning: what `redrive --error-code` and the console's filters match. Handlers\n"
    + "add codes of their own (RetryableError / PermanentError with a code), and an error thrown with a\n"
    + "string code (a driver's ECONNRESET, a SQLSTATE) is recorded with it; `jobs get <id>` shows a\n"
    + 'job\'s. With --json prints {"codes": [{"code", "class", "description"}, ...]}.',
  run: async (ctx) => {
    const codes = JOB_ERROR_CODE_NAMES.map((code) => ({ code, class: JOB_ERROR_CODES[code].class, description: JOB_ERROR_CODES[code].description }));
    ctx.out.result({ codes }, [
      ...formatTable([["CODE", "CLASS", "MEANING"], ...codes.map((c) => [c.code, c.class, c.description])]),
      "",
      "Handlers may record codes of their own; see a job's with: npm run porter -- jobs get <job_id>",
    ]);
  },
});
