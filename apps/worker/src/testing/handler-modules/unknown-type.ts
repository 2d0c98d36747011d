import { defineHandler } from "@porter/sdk";

export default defineHandler({ type: "custom.unregistered", run: async () => ({}) });
