// Stand-ins for the third-party services the example's handlers call: a mail provider and a
// webhook subscriber's endpoint. They live in the worker process (in memory); swap them for real
// clients (fetch, an SDK) and the handlers stay as they are.

/** What a mail provider's send call takes: like most mail APIs, it accepts an idempotency key. */
export type MailMessage = { recipientRef: string; templateRef: string; idempotencyKey: string };

const sentKeys = new Map<string, string>();

/**
 * A mail provider: accepts a message and returns its id. A repeated idempotency key returns the
 * first message's id without sending again (the provider's own guard against a retried request).
 */
export const mailProvider = {
  send: async (message: MailMessage, signal: AbortSignal): Promise<{ messageId: string }> => {
    signal.throwIfAborted();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const known = sentKeys.get(message.idempotencyKey);
    if (known) return { messageId: known };
    const messageId = `msg_${sentKeys.size + 1}_${Date.now().toString(36)}`;
    sentKeys.set(message.idempotencyKey, messageId);
    return { messageId };
  },
};

/** An HTTP-like answer: a status and headers (a 429 carries `retry-after`, in seconds). */
export type EndpointResponse = { status: number; headers: Headers };

/** Each subscriber endpoint accepts one delivery per this many milliseconds, and answers 429 to the rest. */
export const ENDPOINT_WINDOW_MS = 1_000;
const lastAccepted = new Map<string, number>();

/**
 * A webhook subscriber's endpoint with a rate limit: one delivery per {@link ENDPOINT_WINDOW_MS}
 * per endpoint; a delivery inside the window gets `429 Too Many Requests` with `Retry-After`
 * (whole seconds until the window reopens), as real APIs answer.
 */
export const subscriberEndpoint = {
  post: async (endpointRef: string, _event: unknown, signal: AbortSignal): Promise<EndpointResponse> => {
    signal.throwIfAborted();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const now = Date.now();
    const last = lastAccepted.get(endpointRef);
    if (last !== undefined && now - last < ENDPOINT_WINDOW_MS) {
      const retryAfterS = Math.max(1, Math.ceil((last + ENDPOINT_WINDOW_MS - now) / 1000));
      return { status: 429, headers: new Headers({ "retry-after": String(retryAfterS) }) };
    }
    lastAccepted.set(endpointRef, now);
    return { status: 200, headers: new Headers() };
  },
};
