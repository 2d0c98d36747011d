// A user's handler module in plain JavaScript.
import { defineHandler } from "@porter/sdk";

export const js = defineHandler({
  type: "custom.js",
  run: async (job) => ({ from: "js", n: job.payload.n }),
});
