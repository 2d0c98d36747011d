import { z } from "zod";

/** A worker process as the pools and worker pages show it (core WorkerRow). */
export const ZWorkerRow = z.object({
  id: z.string(),
  pool_id: z.string(),
  host: z.string(),
  pid: z.number().int(),
  version: z.string(),
  concurrency: z.number().int(),
  running: z.number().int(),
  draining: z.boolean(),
  started_at: z.string(),
  heartbeat_at: z.string(),
  stopped_at: z.string().nullable(),
  heartbeat_age_s: z.number(),
  status: z.enum(["live", "lost", "stopped"]),
});
