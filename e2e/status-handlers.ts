// The handler of the tenant status page spec (status-page.spec.ts), run by a worker of its own pool
// (`--pool e2e_status --handlers e2e/status-handlers.ts`): `e2e.report.build` reports its progress
// in four steps, STEP_MS apart (long enough for the page to show each one: a progress report
// reaches the database with the next heartbeat, within about a second), then succeeds.
import { defineHandler } from "@porter/sdk";
import { z } from "zod";

const STEP_MS = Number(process.env.PORTER_E2E_STEP_MS ?? 2500);
const STEPS = ["collect", "aggregate", "render", "upload"] as const;
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

export const reportBuild = defineHandler({
  type: "e2e.report.build",
  payload: z.object({ report: z.string() }),
  run: async (job, ctx) => {
    for (const [i, step] of STEPS.entries()) {
      ctx.progress({ fraction: i / STEPS.length, step, message: `${step} for ${job.payload.report}` });
      await sleep(STEP_MS);
    }
    ctx.progress({ fraction: 1, step: "done" });
    return { report: job.payload.report };
  },
});
