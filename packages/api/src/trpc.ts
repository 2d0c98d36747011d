import { APP_ERROR_STATUS, AppError, type AppErrorCode } from "@porter/contracts";
import { authenticateApiKey } from "@porter/core";
import { initTRPC, TRPCError } from "@trpc/server";
import { TRPC_ERROR_CODES_BY_KEY } from "@trpc/server/rpc";
import { z } from "zod";
import type { Context, Role, Session } from "./context";
import { ROLES } from "./context";
import { refuseCrossSite } from "./csrf";
import {
  appErrorOf,
  asAppError,
  DATABASE_UNAVAILABLE_RETRY_AFTER_S,
  INTERNAL_ERROR_MESSAGE,
  isDatabaseUnavailable,
  schemaIssuesOf,
  summarizeIssues,
  toTRPCError,
} from "./errors";

/**
 * What every error carries in `data` besides tRPC's `code`, `httpStatus` and `path`:
 * `appCode` (the AppError code, or BAD_REQUEST for an input that failed validation; null for
 * errors of tRPC itself or internal ones), `details` (AppError details, or `{ issues }` of a
 * schema error) and `retryAfterS` (429, and 503 when the database is unreachable). Never a stack
 * trace, and never the message of an internal error (it may name hosts or tables).
 */
export type ErrorData = {
  code: string;
  httpStatus: number;
  path?: string;
  appCode: AppErrorCode | null;
  details: Record<string, unknown> | null;
  retryAfterS: number | null;
};

/**
 * Who may call a procedure: anyone (`public`), a producer API key (`producer`), or a console user
 * of at least this role. Every procedure declares one through the builder it starts from; the
 * role × procedure matrix test fails on a procedure without it.
 */
export type Policy = "public" | "producer" | Role;
/** Procedure metadata: its policy (set by the builders below, never by hand). */
export type ProcedureMeta = { policy?: Policy };

const t = initTRPC
  .context<Context>()
  .meta<ProcedureMeta>()
  .create({
    // Plain JSON on the wire (no transformer): producers call us with curl and fetch.
    errorFormatter({ shape, error }) {
      const app = appErrorOf(error);
      const issues = !app && error.code === "BAD_REQUEST" ? schemaIssuesOf(error.cause) : undefined;
      const isInternal = !app && error.code === "INTERNAL_SERVER_ERROR";
      const isUnavailable = isInternal && isDatabaseUnavailable(error.cause);
      const code = app?.code ?? (isUnavailable ? "SERVICE_UNAVAILABLE" : error.code);
      const { stack: _stack, ...data } = shape.data as typeof shape.data & { stack?: string };
      const formatted: ErrorData = {
        ...data,
        code,
        httpStatus: app ? APP_ERROR_STATUS[app.code] : isUnavailable ? 503 : data.httpStatus,
        appCode: app?.code ?? (issues ? "BAD_REQUEST" : null),
        details: app?.details ?? (issues ? { issues } : null),
        retryAfterS: app?.retryAfterS ?? (isUnavailable ? DATABASE_UNAVAILABLE_RETRY_AFTER_S : null),
      };
      return {
        // Driver errors and bugs can name hosts, tables or values: their message stays in the logs.
        message: isUnavailable
          ? "database unavailable; retry later"
          : isInternal
            ? INTERNAL_ERROR_MESSAGE
            : issues
              ? `invalid input: ${summarizeIssues(issues)}`
              : shape.message,
        code: TRPC_ERROR_CODES_BY_KEY[code],
        data: formatted,
      };
    },
  });

/**
 * A zod schema as a procedure's `.input()` or `.output()`, parsed synchronously. tRPC calls a zod
 * schema's `parseAsync`, which takes zod's interpreted async path (a promise per check, no
 * JIT-compiled object parsers); none of our contracts has an async check, so `parse` returns the
 * same value or throws the same ZodError. A 1000-job enqueueBatch: input 10.7 → 6.7 ms, output
 * 1.6 → 0.6 ms (bench/src/probe/zod-cost.ts, load ~12). A schema that does have an async check
 * still gets `parseAsync`. Types and everything else are the schema's own.
 */
export const parsedSync = <T extends z.ZodType>(schema: T, accept?: (value: unknown) => z.output<T> | undefined): T =>
  Object.assign(Object.create(schema) as T, {
    async parseAsync(value: unknown) {
      // `accept`: the contracts' exact subset of the schema for its common inputs (e.g.
      // @porter/contracts `acceptEnqueueBatchRequest`); anything it does not accept is parsed.
      const accepted = accept?.(value);
      if (accepted !== undefined) return accepted;
      try {
        return schema.parse(value);
      } catch (error) {
        if (error instanceof z.core.$ZodAsyncError) return schema.parseAsync(value);
        throw error;
      }
    },
  });

export const createTRPCRouter = t.router;
export const mergeRouters = t.mergeRouters;
export const createCallerFactory = t.createCallerFactory;

/**
 * Every procedure starts here: an AppError thrown below (by a procedure or @porter/core) becomes
 * the tRPC error of the same code, so logs and `onError` see 404/409/413… rather than 500.
 */
const baseProcedure = t.procedure.use(async ({ next }) => {
  const result = await next();
  if (!result.ok) {
    const app = asAppError(result.error.cause);
    if (app) throw toTRPCError(app);
  }
  return result;
});

/** Anyone may call it. Keep these few: health, and what the console shows before sign-in. */
export const publicProcedure = baseProcedure.meta({ policy: "public" });

/**
 * Producer API: `Authorization: Bearer <api key>`, verified against `api_keys` (401 when
 * missing, malformed, unknown or revoked). The key's scope is `ctx.apiKey`; procedures check
 * tenant and job type against it. Runs before input validation, so an unauthenticated caller
 * learns nothing about the contract. In the same single statement (core's `authenticateApiKey`):
 * 429 + Retry-After when the key id or the client address failed too often, or the key is over
 * its call rate; `last_used_at` is written at most once a minute. With the process's key cache
 * (`ctx.keyAuthCache`, core's KeyAuthCache) that statement runs once per handful of calls of a key
 * and at least every few seconds, not per call: revocation takes effect within the cache's TTL.
 */
export const producerProcedure = baseProcedure.meta({ policy: "producer" }).use(async ({ ctx, next }) => {
  const header = ctx.req.headers.get("authorization") ?? "";
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) {
    throw toTRPCError(new AppError("UNAUTHORIZED", { message: "missing API key: send Authorization: Bearer <key>" }));
  }
  const params = { presented: match[1]!, address: ctx.clientAddress ?? null, limits: ctx.keyAuthLimits };
  const auth = await (ctx.keyAuthCache ? ctx.keyAuthCache.authenticate(params) : authenticateApiKey(ctx.db, params));
  if (auth.outcome === "invalid") throw toTRPCError(new AppError("UNAUTHORIZED", { message: "invalid or revoked API key" }));
  if (auth.outcome === "throttled") {
    throw toTRPCError(
      new AppError("TOO_MANY_REQUESTS", { message: `too many failed API key attempts; retry after ${auth.retryAfterS} s`, retryAfterS: auth.retryAfterS }),
    );
  }
  if (auth.outcome === "rate_limited") {
    throw toTRPCError(
      new AppError("TOO_MANY_REQUESTS", { message: `this API key is over its call rate; retry after ${auth.retryAfterS} s`, retryAfterS: auth.retryAfterS }),
    );
  }
  // tRPC merges this into ctx (a copy of every field of it per call would be ours on top of tRPC's).
  return next({ ctx: { apiKey: auth.scope } });
});

const requireRole = (minimum: Role) =>
  baseProcedure.meta({ policy: minimum }).use(async ({ ctx, next, type }) => {
    const session: Session | null = ctx.session;
    if (!session) {
      throw new TRPCError({ code: "UNAUTHORIZED", message: "sign in to the console first" });
    }
    // Cookie-authenticated writes must come from our own pages (CSRF); reads have no effect.
    const refusal = type === "mutation" ? refuseCrossSite(ctx.req, ctx.trustedOrigins) : null;
    if (refusal) throw new TRPCError({ code: "FORBIDDEN", message: refusal });
    if (ROLES.indexOf(session.role) < ROLES.indexOf(minimum)) {
      throw new TRPCError({ code: "FORBIDDEN", message: `requires the ${minimum} role` });
    }
    const result = await next({ ctx: { ...ctx, session } });
    // The session's next reads must see what this one wrote (reads.ts); a failed mutation may
    // have written too (an audit row), so every one counts.
    if (type === "mutation") await ctx.reads?.noteWrite();
    return result;
  });

/**
 * Console procedures by role (viewer < operator < admin): 401 without a session, 403 below the
 * role — checked before the input is parsed, so a caller without the role learns nothing about
 * the contract. Their mutations also pass the same-origin JSON check of csrf.ts (403).
 */
export const viewerProcedure = requireRole("viewer");
export const operatorProcedure = requireRole("operator");
export const adminProcedure = requireRole("admin");

/**
 * A viewer query that may be served by the read replica (reads.ts; docs/scaling.md "Replica
 * reads"): `ctx.db` and `ctx.prisma` are those of `ctx.reads.target()`. A replica read that fails
 * with a database error, or answers NOT_FOUND (a row it has not replayed yet: a job just enqueued,
 * a redrive just started), runs again on the primary; any other error is the caller's and stands.
 * The procedures themselves are unchanged: they read `ctx.db` as ever.
 */
export const viewerReadProcedure = viewerProcedure.use(async ({ ctx, next, type }) => {
  const target = type === "query" && ctx.reads ? await ctx.reads.target() : null;
  if (!target?.isReplica) return next();
  const result = await next({ ctx: { db: target.db, prisma: target.prisma } });
  if (result.ok) return result;
  // A procedure's AppError reaches here wrapped (code INTERNAL_SERVER_ERROR, the AppError its
  // cause): baseProcedure maps it to its own code further out.
  const app = appErrorOf(result.error);
  const isNotFound = (app?.code ?? result.error.code) === "NOT_FOUND";
  const isReplicaFailure = result.error.code === "INTERNAL_SERVER_ERROR" && !app;
  if (!isNotFound && !isReplicaFailure) return result;
  if (isReplicaFailure) ctx.reads?.replicaFailed(result.error.cause);
  const primary = ctx.reads!.primary();
  return next({ ctx: { db: primary.db, prisma: primary.prisma } });
});
