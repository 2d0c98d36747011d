// The handler of the observability spec (observability.spec.ts), run by a worker of its own pool
// (`--pool e2e_obs --handlers e2e/observability-handlers.ts`): `e2e.obs.work` takes RUN_MS, so a
// burst against the queue's concurrency cap builds a backlog that drains at a known pace.
import { defineHandler } from "@porter/sdk";
import { z } from "zod";

const RUN_MS = Number(process.env.PORTER_E2E_OBS_RUN_MS ?? 1000);

export const obsWork = defineHandler({
  type: "e2e.obs.work",
  payload: z.object({ n: z.number() }),
  run: async (job) => {
    await new Promise((done) => setTimeout(done, RUN_MS));
    return { n: job.payload.n };
  },
});
