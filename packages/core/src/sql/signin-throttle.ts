import type { Db } from "../db";

/** Failed console sign-ins allowed per account and per client address (token buckets). */
export type SignInLimits = {
  /** Failures in a row for one email before 429s, and the refill rate per second. */
  accountBurst: number;
  accountRatePerSecond: number;
  /** The same for one client address (covers password spraying over many emails). */
  addressBurst: number;
  addressRatePerSecond: number;
};

/** Defaults: 10 failures per account then one per 30 s; 30 per address then one per 5 s. */
export const DEFAULT_SIGNIN_LIMITS: SignInLimits = { accountBurst: 10, accountRatePerSecond: 1 / 30, addressBurst: 30, addressRatePerSecond: 1 / 5 };

type SignInSubject = { email: string; address: string | null; limits?: Partial<SignInLimits>; now?: Date };

const bucketsOf = (p: SignInSubject) => {
  const limits = { ...DEFAULT_SIGNIN_LIMITS, ...p.limits };
  const email = p.email.trim().toLowerCase();
  return {
    scopes: ["signin_account", ...(p.address ? ["signin_addr"] : [])],
    keys: [email, ...(p.address ? [p.address] : [])],
    rates: [limits.accountRatePerSecond, ...(p.address ? [limits.addressRatePerSecond] : [])],
    bursts: [limits.accountBurst, ...(p.address ? [limits.addressBurst] : [])],
  };
};

/**
 * Seconds until this email may try again from this address, or null when it may try now (both
 * buckets hold a token). Checked before the password is verified, so a throttled guess learns
 * nothing — not even a right password passes. One read of `rate_buckets` (shared by every
 * console process).
 */
export const signInRetryAfter = async (db: Db, params: SignInSubject): Promise<number | null> => {
  const b = bucketsOf(params);
  const { rows } = await db.query<{ wait: number | null }>(
    // Per bucket: the time until it holds one token again (0 when it already does); the longest wins.
    `SELECT max(greatest(0, (1 - porter_tokens(rb.tokens, rb.updated_at, s.rate, s.burst, coalesce($5, now()))) / s.rate))::float8 AS wait
       FROM unnest($1::text[], $2::text[], $3::float8[], $4::float8[]) AS s(scope, key, rate, burst)
       JOIN rate_buckets rb ON rb.scope = s.scope AND rb.key = s.key`,
    [b.scopes, b.keys, b.rates, b.bursts, params.now ?? null],
  );
  const wait = rows[0]?.wait ?? 0;
  return wait > 0 ? Math.max(1, Math.ceil(wait)) : null;
};

/**
 * Charges a failed sign-in to the email's and the address's buckets (one statement; concurrent
 * failures serialise on the bucket rows). Returns whether this failure emptied a bucket — the
 * moment the account or address becomes throttled, which the caller audits once rather than
 * auditing every refused attempt of a flood.
 */
export const recordSignInFailure = async (db: Db, params: SignInSubject): Promise<{ isNowThrottled: boolean }> => {
  const b = bucketsOf(params);
  const { rows } = await db.query<{ is_empty: boolean }>(
    `INSERT INTO rate_buckets AS rb (scope, key, tokens, updated_at)
     SELECT s.scope, s.key, s.burst - 1, coalesce($5, now())
       FROM unnest($1::text[], $2::text[], $3::float8[], $4::float8[]) AS s(scope, key, rate, burst)
     ON CONFLICT (scope, key) DO UPDATE
       SET tokens = greatest(0, porter_tokens(rb.tokens, rb.updated_at,
                      (SELECT s.rate FROM unnest($1::text[], $3::float8[]) s(scope, rate) WHERE s.scope = rb.scope),
                      (SELECT s.burst FROM unnest($1::text[], $4::float8[]) s(scope, burst) WHERE s.scope = rb.scope),
                      coalesce($5, now())) - 1),
           updated_at = coalesce($5, now())
     RETURNING rb.tokens < 1 AS is_empty`,
    [b.scopes, b.keys, b.rates, b.bursts, params.now ?? null],
  );
  return { isNowThrottled: rows.some((r) => r.is_empty) };
};

/** A successful sign-in clears the account's failures (the address's stay: they may be another account's). */
export const clearSignInFailures = async (db: Db, params: { email: string }): Promise<void> => {
  await db.query(`DELETE FROM rate_buckets WHERE scope = 'signin_account' AND key = $1`, [params.email.trim().toLowerCase()]);
};
