import { defineHandler } from "@porter/sdk";

export const echo = defineHandler({ type: "custom.echo", run: async () => ({}) });
export const settings = { retries: 3 };
