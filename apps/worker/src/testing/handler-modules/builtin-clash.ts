import { defineHandler } from "@porter/sdk";

export default defineHandler({ type: "diag.sleep", run: async () => ({}) });
