import { defineHandler } from "@porter/sdk";

export const echo = defineHandler({ type: "custom.echo", run: async (job) => ({ echo: job.payload.text }) });
export const elsewhere = defineHandler({ type: "custom.elsewhere", run: async () => ({}) });
