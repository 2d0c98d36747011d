import type pg from "pg";
import type { ApiKeyScope } from "../control-plane/api-keys";
import { authenticateApiKey, type KeyAuthLimits, type KeyAuthResult } from "./authenticate-key";

/** Options of {@link KeyAuthCache}. */
export type KeyAuthCacheOptions = {
  /**
   * How long a verified key is trusted without asking the database again: a revoked key (or a
   * changed scope) takes effect within this bound in every process. Default 5 s.
   */
  ttlMs?: number;
  /** Calls' worth of the key's rate taken from its shared bucket per round trip: rate × this. Default 0.1 s. */
  takeSeconds?: number;
  /** Most tokens taken per round trip. Default 1000. */
  maxTake?: number;
  /** Most keys remembered (the oldest verified is forgotten first). Default 10,000. */
  maxEntries?: number;
  /** The clock (tests). Default Date.now. */
  now?: () => number;
};

type Entry = {
  scope: ApiKeyScope;
  /** Verified until then; afterwards the next call asks the database again before it is answered. */
  expiresAt: number;
  /** Calls already paid for in the key's shared bucket, spent here one per call. */
  tokens: number;
  /** The shared bucket was empty: calls are refused without a round trip until then. */
  limitedUntil: number;
  ratePerSecond: number;
};

/** A refresh in flight for one presented key; concurrent callers of that key wait for it. */
type Flight = { promise: Promise<void>; waiters: number };

/**
 * Producer key authentication without a database round trip per call: the result of
 * `authenticateApiKey` (porter_authenticate_key) for a presented key is kept in this process for
 * `ttlMs`, together with a handful of tokens taken at once from the key's shared rate bucket
 * (`rate_buckets`, scope 'api_key'). Each call spends one; when they run out — or the entry is
 * older than `ttlMs` — the next call asks the database again (one caller per key at a time, the
 * others wait for it), which re-verifies the key, takes more tokens and writes `last_used_at` (at
 * most once a minute, as before).
 *
 * What holds:
 * - Revocation and scope changes take effect within `ttlMs` in every process (default 5 s).
 * - The key's call rate holds across any number of processes: tokens only come from the shared
 *   bucket, so all processes together get at most rate × time + burst calls. A process that
 *   stops leaves at most one handful unspent (never more calls than the rate allows).
 * - Only verified keys are remembered, by the whole presented key: a wrong secret never matches
 *   an entry, so every failure still goes to the database and is charged to the key id's and the
 *   address's failure buckets (the throttle holds exactly as before). A key id or address locked
 *   by failures is refused at the entry's next refresh — a caller with the right secret may finish
 *   its handful of calls first (the lock is against guessing, which a right secret is not).
 * - A key over its rate is refused (429) without a round trip until its next token is due.
 */
export class KeyAuthCache {
  private readonly entries = new Map<string, Entry>();
  private readonly flights = new Map<string, Flight>();
  private readonly ttlMs: number;
  private readonly takeSeconds: number;
  private readonly maxTake: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(
    private readonly db: pg.Pool,
    options: KeyAuthCacheOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 5000;
    this.takeSeconds = options.takeSeconds ?? 0.1;
    this.maxTake = options.maxTake ?? 1000;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  /** The outcome for a presented key, as `authenticateApiKey`'s (one call's token spent on `ok`). */
  async authenticate(params: { presented: string; address: string | null; limits?: Partial<KeyAuthLimits> }): Promise<KeyAuthResult> {
    const key = params.presented.trim();
    // A few rounds: each waits for a refresh that may have been spent by the other waiters.
    for (let round = 0; round < 4; round++) {
      const answer = this.fromEntry(key);
      if (answer) return answer;
      const flight = this.flights.get(key);
      if (!flight) return this.refresh(key, params);
      flight.waiters++;
      await flight.promise;
    }
    // Heavy contention on one key: this call asks for itself.
    return authenticateApiKey(this.db, { ...params, take: 1 });
  }

  /** Forgets every remembered key (tests; a process that wants revocations at once). */
  clear(): void {
    this.entries.clear();
  }

  /** An answer from a live entry, or undefined when the database must be asked. */
  private fromEntry(key: string): KeyAuthResult | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    const now = this.now();
    if (now >= entry.expiresAt) return undefined;
    if (entry.tokens >= 1) {
      entry.tokens -= 1;
      return { outcome: "ok", scope: entry.scope, granted: 1, ratePerSecond: entry.ratePerSecond };
    }
    if (now < entry.limitedUntil) {
      return { outcome: "rate_limited", retryAfterS: Math.max(1, Math.ceil((entry.limitedUntil - now) / 1000)) };
    }
    return undefined;
  }

  /** Asks the database for `key` (re-verifies it, takes tokens); this caller's call is the first spent. */
  private async refresh(key: string, params: { presented: string; address: string | null; limits?: Partial<KeyAuthLimits> }): Promise<KeyAuthResult> {
    const previous = this.entries.get(key);
    const flight: Flight = { promise: Promise.resolve(), waiters: 0 };
    const rate = previous?.ratePerSecond ?? 1;
    const take = Math.min(this.maxTake, Math.max(1, Math.ceil(rate * this.takeSeconds), (previous ? (this.lastWaiters.get(key) ?? 0) : 0) + 1));
    let release!: () => void;
    flight.promise = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.flights.set(key, flight);
    try {
      const result = await authenticateApiKey(this.db, { ...params, take });
      const now = this.now();
      const isLive = previous !== undefined && now < previous.expiresAt;
      if (result.outcome === "ok") {
        this.remember(key, {
          scope: result.scope,
          expiresAt: now + this.ttlMs,
          // This call spends one of the tokens granted; the rest wait here for the next calls.
          tokens: (isLive ? previous.tokens : 0) + result.granted - 1,
          limitedUntil: 0,
          ratePerSecond: result.ratePerSecond,
        });
        return { ...result, granted: 1 };
      }
      if (result.outcome === "rate_limited" && result.scope) {
        this.remember(key, {
          scope: result.scope,
          expiresAt: now + this.ttlMs,
          tokens: 0,
          limitedUntil: now + (result.waitMs ?? result.retryAfterS * 1000),
          ratePerSecond: result.ratePerSecond ?? rate,
        });
        return { outcome: "rate_limited", retryAfterS: result.retryAfterS };
      }
      // Invalid (revoked, unknown) or throttled: nothing of this key is trusted any more.
      this.entries.delete(key);
      return result;
    } catch (error) {
      this.entries.delete(key);
      throw error;
    } finally {
      this.lastWaiters.set(key, flight.waiters);
      if (this.lastWaiters.size > this.maxEntries) this.lastWaiters.delete(this.lastWaiters.keys().next().value!);
      this.flights.delete(key);
      release();
    }
  }

  /** Callers that waited on each key's last refresh: the next refresh takes at least that many tokens. */
  private readonly lastWaiters = new Map<string, number>();

  private remember(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.entries.set(key, entry);
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
  }
}
