import type pg from "pg";
import { pgClientClasses } from "./pg-clients";
import { type ClaimStats, distribution, nowMs } from "./protocol";

type ClientState = { txStart: number | null; isClaimTx: boolean; claimRows: number };
type QueryResultLike = { rowCount?: number | null } | undefined;
type AnyQuery = (this: pg.Client, ...args: unknown[]) => unknown;

/**
 * Times every claim of a worker process at the driver: all three systems talk to PostgreSQL
 * through node-postgres, so wrapping `pg.Client.prototype.query` measures them the same way.
 * A claim is a statement the system's `isClaim` recognises; run alone it is timed from dispatch
 * to result, inside a transaction (Porter's BEGIN; set_config; claim; COMMIT) from BEGIN to the
 * end of COMMIT. Pool checkout is outside both.
 */
export class ClaimTimer {
  private readonly latencies: number[] = [];
  private readonly rowsPerClaim: number[] = [];

  constructor(private readonly isClaim: (text: string) => boolean) {}

  /** Claims so far, without the first `skip` (cold: first plans, first connections). */
  stats(skip: number): ClaimStats {
    const latencies = this.latencies.slice(skip);
    const rows = this.rowsPerClaim.slice(skip).reduce((a, b) => a + b, 0);
    return { claims: latencies.length, rows, latency: distribution(latencies), samples: latencies };
  }

  private record(ms: number, rows: number): void {
    this.latencies.push(ms);
    this.rowsPerClaim.push(rows);
  }

  /** Wraps the `query` of every node-postgres in this process (the bench's and the peers': pg-clients.ts). */
  install(): void {
    for (const Client of pgClientClasses()) this.installOn(Client);
  }

  private installOn(Client: typeof pg.Client): void {
    const timer = this;
    const states = new WeakMap<pg.Client, ClientState>();
    const original = Client.prototype.query as unknown as AnyQuery;
    const patched: AnyQuery = function (this: pg.Client, ...args: unknown[]) {
      const first = args[0] as { text?: unknown } | string | undefined;
      const text = typeof first === "string" ? first : typeof first?.text === "string" ? first.text : null;
      if (text === null) return original.apply(this, args);
      let s = states.get(this);
      if (!s) {
        s = { txStart: null, isClaimTx: false, claimRows: 0 };
        states.set(this, s);
      }
      const state = s;
      const t0 = nowMs();
      const head = text.trimStart().slice(0, 8).toUpperCase();
      let onDone: ((res: QueryResultLike) => void) | null = null;
      if (head.startsWith("BEGIN")) {
        state.txStart = t0;
        state.isClaimTx = false;
      } else if (head.startsWith("COMMIT") || head.startsWith("ROLLBACK")) {
        if (head.startsWith("COMMIT") && state.isClaimTx && state.txStart !== null) {
          const start = state.txStart;
          const rows = state.claimRows;
          onDone = () => timer.record(nowMs() - start, rows);
        }
        state.txStart = null;
        state.isClaimTx = false;
      } else if (timer.isClaim(text)) {
        if (state.txStart !== null) {
          state.isClaimTx = true;
          onDone = (res) => {
            state.claimRows = res?.rowCount ?? 0;
          };
        } else {
          onDone = (res) => timer.record(nowMs() - t0, res?.rowCount ?? 0);
        }
      }
      if (!onDone) return original.apply(this, args);
      const done = onDone;
      const last = args.length - 1;
      const callback = args[last];
      if (typeof callback === "function") {
        args[last] = (error: unknown, res: QueryResultLike) => {
          if (!error) done(res);
          (callback as (e: unknown, r: unknown) => void)(error, res);
        };
        return original.apply(this, args);
      }
      const result = original.apply(this, args) as Promise<QueryResultLike> | undefined;
      if (result && typeof result.then === "function") result.then(done, () => undefined);
      return result;
    };
    Client.prototype.query = patched as unknown as typeof pg.Client.prototype.query;
  }
}
