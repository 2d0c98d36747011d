// Verifying a Porter tenant webhook on the receiving side (issue 13): the Standard Webhooks
// signature (checked by the `standardwebhooks` package), then the body against the contract.
import { type TenantWebhookBody, ZTenantWebhookBody } from "@porter/contracts";
import { Webhook, WebhookVerificationError } from "standardwebhooks";

/** Why a delivery was refused: headers missing, timestamp outside ±5 min, no signature matched, or a body that is not a Porter webhook. */
export type WebhookVerifyReason = "missing_headers" | "timestamp" | "signature" | "body";

/** A delivery that must not be trusted. Answer it with a 400 (Porter retries 5xx, not 4xx). */
export class WebhookVerifyError extends Error {
  override readonly name = "WebhookVerifyError";
  constructor(
    readonly reason: WebhookVerifyReason,
    message: string,
  ) {
    super(message);
  }
}

type Headers = Record<string, string | string[] | undefined> | { get(name: string): string | null };

const HEADERS = ["webhook-id", "webhook-timestamp", "webhook-signature"] as const;

const pick = (headers: Headers): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const name of HEADERS) {
    const raw =
      typeof (headers as { get?: unknown }).get === "function"
        ? (headers as { get(name: string): string | null }).get(name)
        : ((headers as Record<string, string | string[] | undefined>)[name]
          ?? Object.entries(headers as Record<string, string | string[] | undefined>).find(([k]) => k.toLowerCase() === name)?.[1]);
    const value = Array.isArray(raw) ? raw[0] : raw;
    if (value) out[name] = value;
  }
  return out;
};

const reasonOf = (message: string): WebhookVerifyReason =>
  /missing required headers|invalid signature headers/i.test(message) ? "missing_headers" : /timestamp/i.test(message) ? "timestamp" : "signature";

/**
 * Verifies one delivery: `secret` is the endpoint's `whsec_…` (or several: during a rotation pass
 * the new and the old one), `headers` the request's (a plain object, Node's `req.headers`, or a
 * fetch `Headers`), `rawBody` the exact bytes received (not re-serialized JSON). Returns the parsed
 * body, or throws a {@link WebhookVerifyError}. Deduplicate on the `webhook-id` header: a retried
 * delivery carries the same id.
 */
export const verifyWebhook = (secret: string | readonly string[], headers: Headers, rawBody: string | Buffer): TenantWebhookBody => {
  const secrets = typeof secret === "string" ? [secret] : [...secret];
  if (secrets.length === 0) throw new WebhookVerifyError("signature", "no secret to verify with");
  const picked = pick(headers);
  const body = typeof rawBody === "string" ? rawBody : rawBody.toString("utf8");
  let lastMessage = "no matching signature";
  let payload: unknown;
  for (const s of secrets) {
    try {
      payload = new Webhook(s).verify(body, picked);
      break;
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error;
      lastMessage = error.message;
      const reason = reasonOf(error.message);
      if (reason !== "signature") throw new WebhookVerifyError(reason, error.message);
    }
  }
  if (payload === undefined) throw new WebhookVerifyError("signature", lastMessage);
  const parsed = ZTenantWebhookBody.safeParse(payload);
  if (!parsed.success)
    throw new WebhookVerifyError("body", `not a Porter webhook body: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  return parsed.data;
};
