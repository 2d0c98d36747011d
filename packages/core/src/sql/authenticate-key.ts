import { createHash } from "node:crypto";
import type pg from "pg";
import type { ApiKeyScope } from "../control-plane/api-keys";

/** Limits applied by {@link authenticateApiKey}. */
export type KeyAuthLimits = {
  /** Calls per second of a key without its own `rate_per_second` (burst = max(1, rate)). */
  defaultRatePerSecond: number;
  /** Failed authentications allowed per key id and per client address: refill per second… */
  failRatePerSecond: number;
  /** …and burst (this many failures in a row before 429s start). */
  failBurst: number;
};

/** Defaults: 500 calls/s per key (a runaway producer cannot take the database); 20 failed secrets in a row per key id or address, then 1 a second. */
export const DEFAULT_KEY_AUTH_LIMITS: KeyAuthLimits = { defaultRatePerSecond: 500, failRatePerSecond: 1, failBurst: 20 };

/**
 * What became of a presented key: `ok` (its scope), `invalid` (malformed, unknown, revoked or a
 * wrong secret: 401), `throttled` (too many failures for the key id or from the address: 429,
 * checked before the secret), `rate_limited` (a valid key over its call rate: 429).
 */
export type KeyAuthResult =
  | { outcome: "ok"; scope: ApiKeyScope; granted: number; ratePerSecond: number }
  | { outcome: "invalid" }
  | { outcome: "throttled"; retryAfterS: number }
  | { outcome: "rate_limited"; retryAfterS: number; waitMs?: number; ratePerSecond?: number; scope?: ApiKeyScope };

const KEY_PATTERN = /^pk_([a-z0-9]{12})_([A-Za-z0-9_-]{32,})$/;

/**
 * The producer API's authentication, rate limit and `last_used_at` in ONE statement (one round
 * trip on the benchmarked enqueue path): `porter_authenticate_key`
 * (packages/core/src/sql/routines/authenticate-key.sql) refuses a key id or address with too many recent failures, checks
 * the secret's SHA-256 against `api_keys`, charges failures to the `api_key_fail*` buckets, takes a
 * token from the key's `api_key` bucket and writes `last_used_at` at most once a minute. All state
 * is in `rate_buckets`, so the limits hold across console processes. The hash is compared in SQL:
 * a timing difference there could only reveal bits of a SHA-256 of a 256-bit secret, which does
 * not help find the secret. Takes a pool, never a client: the statement is its own transaction
 * (it turns off synchronous commit for its bookkeeping, which must never touch a caller's
 * transaction). A malformed key is `invalid` without a round trip. With `take` > 1 an `ok` takes
 * up to that many calls' tokens at once (`granted`, at least 1): the key cache of the API server
 * spends them in process (key-auth-cache.ts).
 */
export const authenticateApiKey = async (
  db: pg.Pool,
  params: { presented: string; address: string | null; limits?: Partial<KeyAuthLimits>; now?: Date; take?: number },
): Promise<KeyAuthResult> => {
  const match = KEY_PATTERN.exec(params.presented.trim());
  if (!match) return { outcome: "invalid" };
  const limits = { ...DEFAULT_KEY_AUTH_LIMITS, ...params.limits };
  const secretHash = createHash("sha256").update(match[2]!).digest("hex");
  const { rows } = await db.query<{
    outcome: KeyAuthResult["outcome"];
    tenant_ids: string[] | null;
    job_types: string[] | null;
    retry_after_s: number | null;
    granted: number | null;
    rate: number | null;
  }>(`SELECT outcome, tenant_ids, job_types, retry_after_s, granted, rate FROM porter_authenticate_key($1, $2, $3, $4, $5, $6, $7, $8)`, [
    match[1],
    secretHash,
    params.address,
    params.now ?? null,
    limits.defaultRatePerSecond,
    limits.failRatePerSecond,
    limits.failBurst,
    Math.max(1, Math.floor(params.take ?? 1)),
  ]);
  const row = rows[0]!;
  if (row.outcome === "ok") {
    const scope = { id: match[1]!, tenantIds: row.tenant_ids!, jobTypes: row.job_types! };
    return { outcome: "ok", scope, granted: Math.max(1, row.granted ?? 1), ratePerSecond: row.rate ?? limits.defaultRatePerSecond };
  }
  if (row.outcome === "invalid") return { outcome: "invalid" };
  const retryAfterS = Math.max(1, Math.ceil(row.retry_after_s ?? 1));
  if (row.outcome === "throttled") return { outcome: "throttled", retryAfterS };
  return {
    outcome: "rate_limited",
    retryAfterS,
    waitMs: Math.max(0, (row.retry_after_s ?? 1) * 1000),
    ratePerSecond: row.rate ?? limits.defaultRatePerSecond,
    scope: { id: match[1]!, tenantIds: row.tenant_ids!, jobTypes: row.job_types! },
  };
};
