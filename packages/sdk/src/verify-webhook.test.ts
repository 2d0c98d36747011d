import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { verifyWebhook, WebhookVerifyError } from "./verify-webhook";

const secretA = `whsec_${Buffer.from("a".repeat(24)).toString("base64")}`;
const secretB = `whsec_${Buffer.from("b".repeat(24)).toString("base64")}`;
const body = JSON.stringify({
  type: "job.succeeded",
  timestamp: "2026-12-01T00:00:00.000Z",
  data: {
    job_id: "0190a0b0-0000-7000-8000-000000000001",
    job_type: "orders.charge",
    tenant_id: "acme",
    status: "SUCCEEDED",
    attempt: 1,
    finished_at: "2026-12-01T00:00:00.000Z",
    result: { ok: true },
    failure: null,
  },
});

const signed = (secrets: string[], payload = body, at = new Date()) => ({
  "webhook-id": "evt_1",
  "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
  "webhook-signature": secrets.map((s) => new Webhook(s).sign("evt_1", at, payload)).join(" "),
});

const reasonOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    if (error instanceof WebhookVerifyError) return error.reason;
    throw error;
  }
  return "verified";
};

describe("verifyWebhook", () => {
  it("returns the parsed body for a valid signature, from a plain object or a fetch Headers", () => {
    expect(verifyWebhook(secretA, signed([secretA]), body).data.result).toEqual({ ok: true });
    expect(verifyWebhook(secretA, new Headers(signed([secretA])), Buffer.from(body)).type).toBe("job.succeeded");
  });

  it("accepts any of several secrets, and a header carrying several signatures (a rotation overlap)", () => {
    expect(verifyWebhook([secretB, secretA], signed([secretA]), body).data.tenant_id).toBe("acme");
    expect(verifyWebhook(secretB, signed([secretB, secretA]), body).data.tenant_id).toBe("acme");
    expect(verifyWebhook(secretA, signed([secretB, secretA]), body).data.tenant_id).toBe("acme");
  });

  it("refuses a wrong secret, a tampered body, missing headers, a stale timestamp and a body that is not Porter's", () => {
    expect(reasonOf(() => verifyWebhook(secretB, signed([secretA]), body))).toBe("signature");
    expect(reasonOf(() => verifyWebhook(secretA, signed([secretA]), body.replace("acme", "evil")))).toBe("signature");
    expect(reasonOf(() => verifyWebhook(secretA, { "webhook-id": "evt_1" }, body))).toBe("missing_headers");
    expect(reasonOf(() => verifyWebhook(secretA, signed([secretA], body, new Date(Date.now() - 3600_000)), body))).toBe("timestamp");
    const other = JSON.stringify({ type: "alert.firing", timestamp: "x", data: {} });
    expect(reasonOf(() => verifyWebhook(secretA, signed([secretA], other), other))).toBe("body");
  });
});
