// The handler of the Dead letters spec (console-dlq.spec.ts), run by a worker of its own pool
// (`--pool e2e_dlq --handlers e2e/dlq-handlers.ts`): `e2e.invoice.sync` calls a pretend billing
// upstream that is down while the file PORTER_E2E_UPSTREAM_FLAG exists (a 503 with a different
// invoice id and request id each time: one failure group), and succeeds once the file is gone —
// the "fix" an operator waits for before redriving.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { defineHandler, RetryableError } from "@porter/sdk";
import { z } from "zod";

export const invoiceSync = defineHandler({
  type: "e2e.invoice.sync",
  payload: z.object({ invoice: z.string() }),
  run: async (job) => {
    const flag = process.env.PORTER_E2E_UPSTREAM_FLAG;
    if (flag && existsSync(flag)) {
      // A provider-style request id (16 hex digits): different on every call, normalized away.
      const requestId = `req_${randomBytes(8).toString("hex")}`;
      throw new RetryableError(
        `GET https://billing-7.e2e.internal:8443/v1/invoices/${job.payload.invoice} returned 503 Service Unavailable (request id ${requestId})`,
        {
          code: "UPSTREAM_UNAVAILABLE",
        },
      );
    }
    return { synced: job.payload.invoice };
  },
});
