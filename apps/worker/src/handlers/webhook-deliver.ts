// The real `webhook.deliver`: an alert notification (a payload naming a webhook endpoint, as core's
// evaluateAlerts enqueues it) is POSTed to the endpoint, signed per Standard Webhooks. Any other
// payload (the demo's, which carry refs but no `webhook_endpoint:` ref) keeps the simulated
// behaviour of simulated.ts, so the demo's traffic is unchanged.
import https from "node:https";
import tls from "node:tls";
import { lookupOf, readAllowedNetworks, recordWebhookDelivery, resolveWebhookTarget, type WebhookTarget, WebhookTargetError } from "@porter/core";
import { type AnyHandler, type HandlerContext, type Job, PermanentError, RetryableError } from "@porter/sdk";
import type pg from "pg";
import { Webhook } from "standardwebhooks";
import { z } from "zod";
import { webhookDeliver as simulatedWebhookDeliver } from "./simulated";

/** What the real delivery needs from the worker: its database (the endpoint is read at delivery time) and TLS trust. */
export type WebhookDeliverDeps = {
  db: pg.Pool;
  /**
   * Extra certificate authorities (PEM) trusted besides the system's, e.g. a private CA or a
   * test's self-signed certificate (`PORTER_WEBHOOK_CA_FILE` for the bin). Verification stays on.
   */
  ca?: string | Buffer | undefined;
  /** Whole request timeout. Default 10 000 ms. */
  timeoutMs?: number | undefined;
};

const ENDPOINT_REF = /^webhook_endpoint:([A-Za-z0-9_.-]{1,200})$/;

const ZEndpointDelivery = z.strictObject({
  endpoint_ref: z.string().regex(ENDPOINT_REF),
  event: z.strictObject({
    id: z.string().min(1).max(200),
    type: z.string().min(1).max(100),
    timestamp: z.string().min(1).max(100),
    data: z.record(z.string(), z.unknown()),
  }),
});
type EndpointDelivery = z.infer<typeof ZEndpointDelivery>;

type Parsed = { kind: "endpoint"; delivery: EndpointDelivery } | { kind: "simulated"; payload: unknown };

/** A payload for the real delivery: its `endpoint_ref` names a webhook endpoint. */
const isEndpointDelivery = (raw: unknown): boolean =>
  typeof raw === "object"
  && raw !== null
  && typeof (raw as { endpoint_ref?: unknown }).endpoint_ref === "string"
  && (raw as { endpoint_ref: string }).endpoint_ref.startsWith("webhook_endpoint:");

/** The longest Retry-After honoured (a provider asking for an hour gets the job's backoff instead). */
const MAX_RETRY_AFTER_MS = 15 * 60_000;

/** A Retry-After header (seconds or an HTTP date) in ms, or undefined. */
export const retryAfterMs = (header: string | undefined, now = Date.now()): number | undefined => {
  if (!header) return undefined;
  const seconds = Number(header);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - now;
  return Number.isFinite(ms) && ms >= 0 ? Math.min(ms, MAX_RETRY_AFTER_MS) : undefined;
};

/**
 * The `webhook.deliver` handler. Real deliveries read the endpoint (url, secret, enabled) from
 * `webhook_endpoints` when they run — the secret is never in a payload or a log — and POST the
 * event `{type, timestamp, data}` as JSON with `webhook-id` (the event id, the same on every
 * attempt), `webhook-timestamp` and `webhook-signature` (`standardwebhooks`' `Webhook(secret).sign`).
 * TLS is verified (extra CAs from `deps.ca`), redirects are not followed, the request times out.
 * Outcomes: 2xx → `{status}`; 429 → RetryableError (throttle, Retry-After); 5xx, a timeout or a
 * network/TLS error → RetryableError; a redirect or another 4xx → PermanentError (the job dies and
 * the DLQ applies); a deleted endpoint → PermanentError; a disabled one → `{skipped}`.
 * The URL passes the SSRF guard again before each attempt (core webhooks/ssrf.ts; a refused address
 * is permanent) and the socket connects to the checked addresses only. During a secret rotation's
 * overlap the previous secret signs too (two `v1,` signatures). Every attempt writes one
 * webhook_deliveries row (status or null, host-only error, duration).
 */
export const createWebhookDeliver = (deps: WebhookDeliverDeps): AnyHandler => {
  const ca = deps.ca ? [...tls.rootCertificates, deps.ca.toString()] : undefined;
  const timeoutMs = deps.timeoutMs ?? 10_000;
  return {
    type: "webhook.deliver",
    payload: undefined,
    parsePayload: (raw): Parsed => {
      if (!isEndpointDelivery(raw)) return { kind: "simulated", payload: simulatedWebhookDeliver.parsePayload(raw) };
      const parsed = ZEndpointDelivery.safeParse(raw);
      if (!parsed.success) {
        const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "(payload)"}: ${i.message}`).join("; ");
        throw new PermanentError(`invalid payload for webhook.deliver: ${issues}`, { code: "INVALID_PAYLOAD", cause: parsed.error });
      }
      return { kind: "endpoint", delivery: parsed.data };
    },
    run: async (job: Job<Parsed>, ctx: HandlerContext) => {
      if (job.payload.kind === "simulated") return simulatedWebhookDeliver.run({ ...job, payload: job.payload.payload as never }, ctx);
      return deliver(job.payload.delivery, job, ctx, { db: deps.db, ca, timeoutMs });
    },
  };
};

const deliver = async (
  delivery: EndpointDelivery,
  job: Job<Parsed>,
  ctx: HandlerContext,
  deps: { db: pg.Pool; ca: string[] | undefined; timeoutMs: number },
) => {
  const endpointId = ENDPOINT_REF.exec(delivery.endpoint_ref)![1]!;
  // The previous secret only while its rotation overlap lasts (the database's clock decides).
  const { rows } = await deps.db.query<{ url: string; secret: string; enabled: boolean; previous_secret: string | null }>(
    `SELECT url, secret, enabled, CASE WHEN previous_secret_expires_at > now() THEN previous_secret END AS previous_secret
       FROM webhook_endpoints WHERE id = $1`,
    [endpointId],
  );
  const endpoint = rows[0];
  if (!endpoint) throw new PermanentError(`webhook endpoint ${endpointId} no longer exists`, { code: "WEBHOOK_ENDPOINT_GONE" });
  if (!endpoint.enabled) return { skipped: "endpoint disabled", status: null };
  const url = new URL(endpoint.url);
  if (url.protocol !== "https:") throw new PermanentError(`webhook endpoint ${endpointId} is not https`, { code: "WEBHOOK_REJECTED" });
  // The host only: a URL's path or query may carry a token of the subscriber's.
  const where = url.host;

  const started = performance.now();
  const subject = delivery.event.data.job_id;
  const log = async (statusCode: number | null, error: string | null) => {
    try {
      await recordWebhookDelivery(deps.db, {
        endpointId,
        jobId: job.job_id,
        eventId: delivery.event.id,
        eventType: delivery.event.type,
        subjectJobId: typeof subject === "string" && UUID.test(subject) ? subject : null,
        attempt: job.attempt,
        statusCode,
        error,
        durationMs: performance.now() - started,
      });
    } catch (err) {
      // The log is a view; the attempt record is the truth. A failed insert costs a log row only.
      ctx.logger.warn("webhook delivery log row not written", { err });
    }
  };

  // The SSRF guard again, at delivery time; the request connects to the addresses checked here.
  let target: WebhookTarget;
  try {
    target = await resolveWebhookTarget(endpoint.url, await readAllowedNetworks(deps.db));
  } catch (error) {
    if (!(error instanceof WebhookTargetError)) throw error;
    const unresolved = / does not resolve/.test(error.message);
    await log(null, error.message);
    if (unresolved) throw new RetryableError(error.message, { code: "WEBHOOK_UNAVAILABLE" });
    throw new PermanentError(error.message, { code: "WEBHOOK_REFUSED_ADDRESS" });
  }

  const body = JSON.stringify({ type: delivery.event.type, timestamp: delivery.event.timestamp, data: delivery.event.data });
  const sentAt = new Date();
  // Standard Webhooks: several space-separated `v1,<sig>`; during a rotation overlap both secrets sign.
  const secrets = endpoint.previous_secret ? [endpoint.secret, endpoint.previous_secret] : [endpoint.secret];
  const headers = {
    "content-type": "application/json",
    "user-agent": "porter-webhooks/1",
    "webhook-id": delivery.event.id,
    "webhook-timestamp": String(Math.floor(sentAt.getTime() / 1000)),
    "webhook-signature": secrets.map((secret) => new Webhook(secret).sign(delivery.event.id, sentAt, body)).join(" "),
  };
  let response: { status: number; retryAfter: string | undefined };
  try {
    response = await post(url, body, headers, { ca: deps.ca, timeoutMs: deps.timeoutMs, signal: ctx.signal, lookup: lookupOf(target) });
  } catch (error) {
    const message = `webhook delivery to ${where} failed: ${error instanceof Error ? error.message : String(error)}`;
    await log(null, message);
    if (ctx.signal.aborted) throw ctx.signal.reason;
    throw new RetryableError(message, { code: "WEBHOOK_UNAVAILABLE", cause: error });
  }
  const { status } = response;
  const isOk = status >= 200 && status < 300;
  await log(status, isOk ? null : `${where} answered ${status}`);
  if (isOk) return { status };
  if (status === 429) {
    throw new RetryableError(`webhook endpoint ${where} answered 429 Too Many Requests`, {
      code: "RATE_LIMITED",
      isThrottle: true,
      retryAfterMs: retryAfterMs(response.retryAfter),
    });
  }
  if (status >= 500) throw new RetryableError(`webhook endpoint ${where} answered ${status}`, { code: "WEBHOOK_UNAVAILABLE" });
  if (status >= 300 && status < 400)
    throw new PermanentError(`webhook endpoint ${where} answered ${status} (redirects are not followed)`, { code: "WEBHOOK_REJECTED" });
  throw new PermanentError(`webhook endpoint ${where} answered ${status}`, { code: "WEBHOOK_REJECTED" });
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** One POST over https.request: TLS verified against `ca` (or the system's CAs), no redirects followed, the body drained and dropped. */
const post = (
  url: URL,
  body: string,
  headers: Record<string, string>,
  options: { ca: string[] | undefined; timeoutMs: number; signal: AbortSignal; lookup: ReturnType<typeof lookupOf> },
): Promise<{ status: number; retryAfter: string | undefined }> =>
  new Promise((resolve, reject) => {
    const request = https.request(
      url,
      {
        method: "POST",
        headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
        ...(options.ca ? { ca: options.ca } : {}),
        timeout: options.timeoutMs,
        signal: options.signal,
        lookup: options.lookup as never,
      },
      (res) => {
        res.resume();
        res.on("end", () => {
          clearTimeout(deadline);
          const retryAfter = res.headers["retry-after"];
          resolve({ status: res.statusCode ?? 0, retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter });
        });
        res.on("error", reject);
      },
    );
    // `timeout` is idle time on the socket; this bounds the whole exchange.
    const deadline = setTimeout(() => request.destroy(new Error(`timed out after ${options.timeoutMs} ms`)), options.timeoutMs);
    request.on("timeout", () => request.destroy(new Error(`timed out after ${options.timeoutMs} ms`)));
    request.on("error", (error) => {
      clearTimeout(deadline);
      reject(error);
    });
    request.end(body);
  });
