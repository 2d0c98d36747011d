import { DEFAULT_MAX_PAYLOAD_BYTES } from "@porter/contracts";
import type { KeyAuthCache, KeyAuthLimits, PolicyCache } from "@porter/core";
import type { ControlDb } from "@porter/db/prisma";
import type { TRPCError } from "@trpc/server";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { TRPC_ERROR_CODES_BY_KEY } from "@trpc/server/rpc";
import type pg from "pg";
import { createContext, type RequestHead, type Session } from "./context";
import { appErrorOf, DATABASE_UNAVAILABLE_RETRY_AFTER_S, isDatabaseUnavailable } from "./errors";
import type { ReplicaReads } from "./reads";
import { appRouter } from "./root";
import type { ErrorData } from "./trpc";

/** Default ceiling of a whole request body: a full batch of 1000 small jobs fits with room. */
export const DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024;

/** What the HTTP endpoint needs from the process that serves it (console, tests). */
export type TrpcHttpDeps = {
  db: pg.Pool;
  /** The control plane's Prisma client (created once by the process, next to `db`). */
  prisma: ControlDb;
  /** Shared by the process, so enqueue does not re-read the registry per request. */
  policyCache: PolicyCache;
  /** The read replica of the console's heavy reads (reads.ts); absent: every read on the primary. */
  replica?: ReplicaReads;
  /** Ceiling of one job's payload (core refuses more with 413). Default 64 KiB. */
  maxPayloadBytes?: number;
  /** Ceiling of the request body, enforced before it is parsed (413). Default 8 MiB. */
  maxBodyBytes?: number;
  /** Path prefix of procedures. Default `/api/trpc`. */
  endpoint?: string;
  /** Reads the console session of a request (see `createSessionReader`); absent = no console sessions. */
  getSession?: (req: Request) => Promise<Session | null>;
  /** Origins console mutations may come from besides the request's own host (see csrf.ts). */
  trustedOrigins?: readonly string[];
  /** The client address of a request (key-failure throttling); default: the last X-Forwarded-For entry. */
  getClientAddress?: (req: RequestHead) => string | null;
  /** Producer keys' default call rate and failure throttling (core's DEFAULT_KEY_AUTH_LIMITS otherwise). */
  keyAuthLimits?: Partial<KeyAuthLimits>;
  /**
   * The process's verified-key cache (core's KeyAuthCache, one per process, over `db`): producer
   * calls authenticate without a round trip each. Absent = the database is asked on every call.
   */
  keyAuthCache?: KeyAuthCache;
  /**
   * Wakes the live status stream's readers (core's StreamNotifier) after a mutation succeeded —
   * enqueue, cancel, retry, redrive all commit before their response; the notify is debounced.
   */
  streamNotifier?: { touch(): void };
  /** Called for every error (log 5xx with their cause; the response never carries it). */
  onError?: (info: { error: TRPCError; path: string | undefined; type: string }) => void;
};

/**
 * Serves one tRPC request (GET queries, POST mutations, plain JSON) and returns the response.
 * A body larger than `maxBodyBytes` is refused with 413 before a byte of it is parsed: by its
 * Content-Length when sent, otherwise by counting while it streams in. A 429 carries
 * `Retry-After`, as does a 503 for an unreachable database. The console's `/api/trpc/[trpc]`
 * route and the tests both go through here.
 */
export const handleTrpcRequest = async (request: Request, deps: TrpcHttpDeps): Promise<Response> => {
  const endpoint = deps.endpoint ?? "/api/trpc";
  const maxBodyBytes = deps.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  let req = request;
  if (request.method !== "GET" && request.method !== "HEAD" && request.body) {
    const body = await readBodyCapped(request, maxBodyBytes);
    if (body === null) return bodyTooLarge(request, endpoint, maxBodyBytes);
    const headers = new Headers(request.headers);
    headers.delete("content-length");
    headers.delete("transfer-encoding");
    req = new Request(request.url, { method: request.method, headers, body, signal: request.signal });
  }
  const response = await fetchRequestHandler({
    endpoint,
    req,
    router: appRouter,
    maxBatchSize: 50,
    createContext: ({ req: trpcReq, resHeaders }) =>
      createContext({
        req: trpcReq,
        resHeaders,
        db: deps.db,
        prisma: deps.prisma,
        policyCache: deps.policyCache,
        replica: deps.replica,
        maxPayloadBytes: deps.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES,
        getSession: deps.getSession,
        trustedOrigins: deps.trustedOrigins,
        getClientAddress: deps.getClientAddress,
        keyAuthLimits: deps.keyAuthLimits,
        keyAuthCache: deps.keyAuthCache,
      }),
    responseMeta: ({ errors }) => {
      const retryAfter = retryAfterOf(errors);
      return retryAfter ? { headers: { "retry-after": retryAfter } } : {};
    },
    onError: deps.onError ? ({ error, path, type }) => deps.onError!({ error, path, type }) : undefined,
  });
  if (request.method === "POST" && response.status < 400) deps.streamNotifier?.touch();
  return response;
};

/** The body as bytes, or null once it passes `limit` (the rest is not read). */
const readBodyCapped = async (request: Request, limit: number): Promise<Uint8Array<ArrayBuffer> | null> => {
  const declared = Number(request.headers.get("content-length"));
  // Past the limit we stop reading and answer at once. The unread rest is left to the server
  // (it is not buffered); cancelling the stream would reset the connection before the client
  // could read the 413.
  if (Number.isFinite(declared) && declared > limit) return null;
  const reader = request.body!.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      reader.releaseLock();
      return null;
    }
    chunks.push(value);
  }
  const body = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
};

/**
 * The `Retry-After` of a response with these errors (seconds, at least 1): the longest wait an
 * error asks for — a 429's, or a 503's for an unreachable database — or undefined.
 */
export const retryAfterOf = (errors: readonly TRPCError[]): string | undefined => {
  let wait: number | undefined;
  for (const e of errors) {
    const s = appErrorOf(e)?.retryAfterS ?? (isDatabaseUnavailable(e.cause) ? DATABASE_UNAVAILABLE_RETRY_AFTER_S : undefined);
    if (typeof s === "number") wait = Math.max(wait ?? s, s);
  }
  return wait === undefined ? undefined : String(Math.max(1, Math.ceil(wait)));
};

/** A 413's JSON body in tRPC's error shape (an array for batch calls), so tRPC clients parse it. */
export const bodyTooLargeJson = (procedurePath: string, isBatch: boolean, limit: number): string => {
  const error = (p: string) => ({
    error: {
      message: `request body exceeds the limit of ${limit} bytes; send smaller batches, and pass references instead of data in payloads`,
      code: TRPC_ERROR_CODES_BY_KEY.PAYLOAD_TOO_LARGE,
      data: {
        code: "PAYLOAD_TOO_LARGE",
        httpStatus: 413,
        path: p,
        appCode: "PAYLOAD_TOO_LARGE",
        details: { limit },
        retryAfterS: null,
      } satisfies ErrorData,
    },
  });
  return JSON.stringify(isBatch ? procedurePath.split(",").map(error) : error(procedurePath));
};

/** A 413 in tRPC's error shape (an array for batch calls), so tRPC clients parse it. */
const bodyTooLarge = (request: Request, endpoint: string, limit: number): Response => {
  const url = new URL(request.url);
  const path = decodeURIComponent(url.pathname.slice(url.pathname.indexOf(endpoint) + endpoint.length + 1));
  return new Response(bodyTooLargeJson(path, url.searchParams.get("batch") === "1", limit), {
    status: 413,
    headers: { "content-type": "application/json", connection: "close" },
  });
};
