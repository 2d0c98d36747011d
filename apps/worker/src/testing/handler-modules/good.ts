// A user's handler module: a default export and an array export (a TypeScript module).
import { defineHandler } from "@porter/sdk";
import { z } from "zod";

export default defineHandler({
  type: "custom.echo",
  payload: z.object({ text: z.string() }),
  run: async (job) => ({ echo: job.payload.text }),
});

export const more = [
  defineHandler({
    type: "custom.upper",
    payload: z.object({ text: z.string() }),
    run: async (job, ctx) => {
      ctx.logger.info("upper-casing");
      return { upper: job.payload.text.toUpperCase() };
    },
  }),
];
