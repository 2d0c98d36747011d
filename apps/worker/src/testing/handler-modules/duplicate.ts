import { defineHandler } from "@porter/sdk";

export const one = defineHandler({ type: "custom.echo", run: async () => ({ n: 1 }) });
export const two = defineHandler({ type: "custom.echo", run: async () => ({ n: 2 }) });
