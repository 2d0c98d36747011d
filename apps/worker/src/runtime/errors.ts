/** Abort reason when a heartbeat found the lease gone (rescued, cancelled, re-claimed): the result is discarded. */
export class LeaseLostError extends Error {
  override readonly name = "LeaseLostError";
  constructor(readonly jobId: string) {
    super(`lease of job ${jobId} was lost; this attempt's result will be discarded`);
  }
}

/** Abort reason when the worker drained and handed the job back to the queue. */
export class HandedBackError extends Error {
  override readonly name = "HandedBackError";
  constructor(readonly jobId: string) {
    super(`job ${jobId} was handed back to the queue by a draining worker`);
  }
}

/**
 * Thrown by `ctx.effect` / `ctx.heartbeat` of an attempt the worker no longer runs: it was
 * abandoned after ignoring its abort signal, lost its lease, was handed back, or already ended.
 */
export class AttemptClosedError extends Error {
  override readonly name = "AttemptClosedError";
  constructor(
    readonly jobId: string,
    readonly why: string,
  ) {
    super(`attempt of job ${jobId} is closed (${why}); the call was refused`);
  }
}

const NETWORK_CODES = ["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EAI_AGAIN"];

/**
 * True for errors that mean the database could not be reached or asked us to try again
 * (connection classes 08/57P/53, serialization and deadlock 40, network errors, pg's own
 * connection messages): the same batch is worth retrying as is.
 */
export const isConnectionError = (error: unknown): boolean => {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string") return /^(08|57P|53|40)/.test(code) || NETWORK_CODES.includes(code);
  const message = error instanceof Error ? error.message : "";
  return /connect|terminat|timeout|closed|not queryable/i.test(message);
};
