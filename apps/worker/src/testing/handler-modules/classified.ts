// A user's handler module whose handlers throw @porter/sdk's error classes: a worker that loaded a
// second copy of the SDK (its own, bundled) would not recognise them and would retry the permanent one.
import { defineHandler, PermanentError } from "@porter/sdk";
import { z } from "zod";

export default [
  defineHandler({
    type: "custom.permanent",
    payload: z.object({ n: z.number() }),
    run: async () => {
      throw new PermanentError("not this one", { code: "CUSTOM_REFUSED" });
    },
  }),
  defineHandler({
    type: "custom.echo",
    payload: z.object({ text: z.string() }),
    run: async (job) => ({ echo: job.payload.text }),
  }),
];
