import { createPool } from "@porter/db/pool";
import { useTestDatabase } from "@porter/db/testing/test-database";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clearSignInFailures, DEFAULT_SIGNIN_LIMITS, recordSignInFailure, signInRetryAfter } from "./signin-throttle";

// The sign-in throttle's buckets in PostgreSQL: what the console's sign-in route and authorize()
// consult, shared by every console process (two pools here, failing concurrently).
const db = useTestDatabase();
let pool2: ReturnType<typeof createPool>;
beforeAll(() => {
  pool2 = createPool(db.appConnectionString, { max: 5, applicationName: "signin-throttle-second" });
});
afterAll(async () => {
  await pool2?.end();
});

describe("sign-in throttle", () => {
  it("50 concurrent wrong passwords from two processes: the account is throttled after its burst, for about a refill", async () => {
    const subject = { email: "Victim@Example.com", address: null };
    expect(await signInRetryAfter(db.appPool, subject)).toBeNull();
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => recordSignInFailure(i % 2 ? db.appPool : pool2, { email: "victim@example.com", address: `198.51.100.${i}` })),
    );
    // Every failure was counted (row-locked upserts): the bucket is empty, not at burst - 25.
    expect(results.filter((r) => r.isNowThrottled).length).toBe(50 - DEFAULT_SIGNIN_LIMITS.accountBurst + 1);
    const wait = await signInRetryAfter(db.appPool, subject);
    expect(wait).not.toBeNull();
    expect(wait!).toBeGreaterThan(0);
    expect(wait!).toBeLessThanOrEqual(Math.ceil(1 / DEFAULT_SIGNIN_LIMITS.accountRatePerSecond));
    // Seen from the other process too, and by email case-insensitively.
    expect(await signInRetryAfter(pool2, { email: "VICTIM@example.com", address: null })).not.toBeNull();
    // Another account is not affected.
    expect(await signInRetryAfter(db.appPool, { email: "other@example.com", address: null })).toBeNull();
  });

  it("the bucket refills with time", async () => {
    const t0 = new Date("2026-12-01T10:00:00Z");
    for (let i = 0; i < DEFAULT_SIGNIN_LIMITS.accountBurst; i++) await recordSignInFailure(db.appPool, { email: "clock@example.com", address: null, now: t0 });
    expect(await signInRetryAfter(db.appPool, { email: "clock@example.com", address: null, now: t0 })).toBe(30);
    expect(await signInRetryAfter(db.appPool, { email: "clock@example.com", address: null, now: new Date(t0.getTime() + 29_000) })).toBe(1);
    expect(await signInRetryAfter(db.appPool, { email: "clock@example.com", address: null, now: new Date(t0.getTime() + 30_000) })).toBeNull();
  });

  it("one address spraying many accounts is throttled per address; the accounts themselves are not", async () => {
    const address = "192.0.2.77";
    for (let i = 0; i < DEFAULT_SIGNIN_LIMITS.addressBurst; i++) await recordSignInFailure(db.appPool, { email: `spray${i}@example.com`, address });
    expect(await signInRetryAfter(db.appPool, { email: "fresh@example.com", address })).not.toBeNull();
    expect(await signInRetryAfter(db.appPool, { email: "fresh@example.com", address: "192.0.2.78" })).toBeNull();
  });

  it("a successful sign-in clears the account's failures", async () => {
    for (let i = 0; i < 3; i++) await recordSignInFailure(db.appPool, { email: "ok@example.com", address: null });
    await clearSignInFailures(db.appPool, { email: "OK@example.com" });
    const { rowCount } = await db.pool.query(`SELECT 1 FROM rate_buckets WHERE scope = 'signin_account' AND key = 'ok@example.com'`);
    expect(rowCount).toBe(0);
  });
});
