import { StreamLimiter } from "@porter/api";
import { StreamHub, StreamNotifier } from "@porter/core";
import { consoleDatabaseUrl, getPool } from "./db";
import { getEnv } from "./env";
import { getLogger } from "./logger";

// The console process's live status stream (issue 13): one StreamHub (one LISTEN connection,
// started with the first SSE subscriber), one StreamNotifier (wakes readers after the console's own
// writes: enqueue, cancel, redrive), one per-credential stream limiter. On globalThis like the pool.
const state = globalThis as typeof globalThis & { porterStreamHub?: StreamHub; porterStreamNotifier?: StreamNotifier; porterStreamLimiter?: StreamLimiter };

export const getStreamHub = (): StreamHub =>
  (state.porterStreamHub ??= new StreamHub({
    pool: getPool(),
    listen: { connectionString: consoleDatabaseUrl() },
    onError: (error) => getLogger().warn("status stream listener recovered from an error", { err: error instanceof Error ? error.message : String(error) }),
  }));

export const getStreamNotifier = (): StreamNotifier => (state.porterStreamNotifier ??= new StreamNotifier(getPool()));

export const getStreamLimiter = (): StreamLimiter => (state.porterStreamLimiter ??= new StreamLimiter(getEnv().PORTER_SSE_MAX_PER_CREDENTIAL));
