// The scale harness's handlers for the demo's background job types (a `--handlers` module: each
// replaces the simulated handler of its type). They sleep the payload's `ms` and succeed, so a
// burn-down measures the queue, not the simulated dependencies' seconds and random failures.
import { defineHandler } from "@porter/sdk";
import { z } from "zod";

const ZScalePayload = z.looseObject({ source_ref: z.string().min(1), ms: z.number().int().min(0).max(60_000) });

const sleeper = (type: string) =>
  defineHandler({
    type,
    payload: ZScalePayload,
    run: async (job, ctx) => {
      if (job.payload.ms > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, job.payload.ms);
          ctx.signal.addEventListener("abort", () => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      return { ok: true };
    },
  });

/** The demo's background pool types (docs/… DESIGN "Demo configuration"): ks.background, email.bulk (cap 8), harvester.sync (cap 4). */
export const documentParse = sleeper("document.parse");
export const embedChunks = sleeper("embed.chunks");
export const emailCampaign = sleeper("email.campaign");
export const harvesterSync = sleeper("harvester.sync");
