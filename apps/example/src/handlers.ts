// The example's handlers, for two of the demo job types (both in the `interactive` pool). Run them:
//   npm run worker -- --pool interactive --handlers apps/example/src/handlers.ts
//   PORTER_HANDLERS=apps/example/src/handlers.ts npm start
// Every export of this module must be a handler (the worker refuses anything else), so the
// simulated services are in ./providers.
import { defineHandler, PermanentError, RetryableError } from "@porter/sdk";
import { z } from "zod";
import { mailProvider, subscriberEndpoint } from "./providers";

const ZRef = z.string().min(1).max(2048);

/**
 * `email.send`: sends one email exactly once, whatever the retries. The send is a `ctx.effect`:
 * the ledger stores its result under the key, so a later attempt of the job (a retry, a redelivery
 * after a crash) gets the stored message id instead of sending again. The same key goes to the
 * provider as its idempotency key: the ledger row commits after the provider answered, so a crash
 * in between is covered by the provider's guard.
 *
 * `simulate_lost_ack: true` (a demo knob) makes the first attempt fail after the send, as if the
 * connection dropped: the retry then finds the effect applied and does not send a second email.
 */
export const emailSend = defineHandler({
  type: "email.send",
  payload: z.object({ recipient_ref: ZRef, template_ref: ZRef, simulate_lost_ack: z.boolean().optional() }),
  run: async (job, ctx) => {
    const key = `email.send:${job.idempotency_key}`;
    const sent = await ctx.effect(key, async () => {
      const { messageId } = await mailProvider.send(
        { recipientRef: job.payload.recipient_ref, templateRef: job.payload.template_ref, idempotencyKey: key },
        ctx.signal,
      );
      ctx.logger.info({ messageId }, "mail provider accepted the message");
      return { provider_message_ref: `mail://${messageId}`, sent_on_attempt: ctx.attempt };
    });
    await ctx.checkpoint({ sent: sent.provider_message_ref });
    if (job.payload.simulate_lost_ack && ctx.attempt === 1) {
      throw new RetryableError("the connection dropped after the mail provider accepted the message", { code: "CONNECTION_RESET" });
    }
    return sent;
  },
});

/**
 * `webhook.deliver`: posts an event to a subscriber's endpoint. A `429` is a throttle: its
 * `Retry-After` becomes the minimum backoff (`retryAfterMs`), and `isThrottle` tells Porter the
 * provider is rate limiting (on a queue with a resource key, the key slows down for everyone).
 * Other 5xx answers are retried; a 4xx no retry can fix is permanent.
 */
export const webhookDeliver = defineHandler({
  type: "webhook.deliver",
  payload: z.object({ endpoint_ref: ZRef, event_ref: ZRef }),
  run: async (job, ctx) => {
    const response = await subscriberEndpoint.post(job.payload.endpoint_ref, { event_ref: job.payload.event_ref }, ctx.signal);
    if (response.status === 429) {
      const retryAfterS = Number(response.headers.get("retry-after") ?? "1");
      throw new RetryableError(`${job.payload.endpoint_ref} answered 429 Too Many Requests`, {
        isThrottle: true,
        retryAfterMs: (Number.isFinite(retryAfterS) ? retryAfterS : 1) * 1000,
      });
    }
    if (response.status >= 500) throw new RetryableError(`${job.payload.endpoint_ref} answered ${response.status}`, { code: "ENDPOINT_UNAVAILABLE" });
    if (response.status >= 400) throw new PermanentError(`${job.payload.endpoint_ref} refused the delivery (${response.status})`, { code: "ENDPOINT_REFUSED" });
    return { delivered: true, status: response.status, attempt: job.attempt };
  },
});
