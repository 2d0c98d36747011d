// Inputs of the overview's flow charts and signals; shared with the console (zod only).
import { ZStorableText } from "@porter/contracts/storable";
import { z } from "zod";

/** The windows of the flow charts (core FLOW_SERIES_WINDOWS): anything else is a 400. */
export const FLOW_SERIES_WINDOW_NAMES = ["15m", "1h", "6h", "24h", "7d"] as const;

const id = ZStorableText.trim().min(1).max(200);

/** `overview.series`: the flow of a scope over a window, one point per step. */
export const ZFlowSeriesInput = z.strictObject({
  window: z.enum(FLOW_SERIES_WINDOW_NAMES),
  queue_id: id.optional(),
  tenant_id: id.optional(),
  job_type: id.optional(),
});

/** `overview.signals`: every queue's signals over the window (seconds, default 15 min), or one queue's with its tenants and job types. */
export const ZSignalsInput = z
  .strictObject({
    queue_id: id.optional(),
    window_s: z.number().int().min(60).max(86_400).default(900),
  })
  .default({ window_s: 900 });
