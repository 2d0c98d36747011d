import { trace } from "@opentelemetry/api";
import type { AppRouter } from "@porter/api";
import {
  formatTraceparent,
  type StreamEvent,
  type StreamEventData,
  type TEnqueueRequest,
  type TEnqueueResult,
  type TJobState,
  type TJobStatus,
  ZTraceparent,
} from "@porter/contracts";
import { TRPCClientError } from "@trpc/client";
import type { inferRouterInputs, inferRouterOutputs } from "@trpc/server";
import { transformResult } from "@trpc/server/unstable-core-do-not-import";
import { fetchSend, nodeSend, type Reply, type Send } from "./transport";
import { type WatchOptions, waitForJob, watchJob } from "./watch";

/** Options of {@link createProducerClient}. */
export type ProducerClientOptions = {
  /** The console's origin (`http://localhost:3000`) or its tRPC endpoint (`…/api/trpc`). */
  url: string;
  /** A producer API key (`pk_…`), sent as `Authorization: Bearer <key>`. */
  apiKey: string;
  /**
   * A fetch implementation (tests, proxies, instrumentation). Default: none — calls go over
   * node:http(s) on keep-alive connections shared by the process's clients.
   */
  fetch?: typeof fetch;
  /**
   * Send single enqueues made in the same turn of the event loop together, in tRPC's batch format
   * (each still its own call with its own reply; see {@link createProducerClient}). Default true.
   */
  joinEnqueues?: boolean;
};

/** Options of one enqueue call. */
export type EnqueueCallOptions = {
  /**
   * The W3C traceparent the call's jobs are enqueued under (those that carry neither a
   * `traceparent` nor a `trace_id` of their own), sent as the `traceparent` header. Default: the
   * active OpenTelemetry span's context, if any (no header without one).
   */
  traceparent?: string;
};

/** A producer's view of Porter: enqueue, read status, cancel. Every failure is a {@link ProducerError}. */
export type ProducerClient = {
  /** Enqueues one job; the same idempotency_key and payload returns the same job (`deduplicated`). */
  enqueue: (request: TEnqueueRequest, options?: EnqueueCallOptions) => Promise<TEnqueueResult>;
  /** Enqueues up to 1000 jobs in one transaction (all or none); results are in input order. */
  enqueueBatch: (jobs: TEnqueueRequest[], options?: EnqueueCallOptions) => Promise<TEnqueueResult[]>;
  /** The job with its status, result or error, and timeline; 404 for an unknown job. */
  get: (jobId: string) => Promise<TJobStatus>;
  /** Cancels a job: queued work at once (CANCELLED), running work cooperatively (RUNNING). */
  cancel: (jobId: string, reason?: string) => Promise<{ job_id: string; status: TJobState }>;
  /**
   * The job's live events (`GET /api/events?job_id=`): its current state, then every change,
   * ending after the terminal one; reconnects with Last-Event-ID, so none is lost.
   */
  watch: (jobId: string, options?: WatchOptions) => AsyncIterable<StreamEvent>;
  /** The terminal event's data; rejects with `WaitForTimeoutError` after `timeoutMs`. */
  waitFor: (jobId: string, options: { timeoutMs: number; signal?: AbortSignal }) => Promise<StreamEventData>;
};

/**
 * A failed producer call. `status` is the HTTP status (0 when no response arrived), `code` the
 * API's error code (BAD_REQUEST, UNAUTHORIZED, FORBIDDEN, NOT_FOUND, CONFLICT, PAYLOAD_TOO_LARGE,
 * TOO_MANY_REQUESTS, or tRPC's own such as INTERNAL_SERVER_ERROR; NETWORK_ERROR without a
 * response), `retryAfterS` how long to wait before retrying a 429 or 503.
 */
export class ProducerError extends Error {
  override readonly name = "ProducerError";
  readonly status: number;
  readonly code: string;
  readonly retryAfterS: number | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(message: string, options: { status: number; code: string; retryAfterS?: number; details?: Record<string, unknown>; cause?: unknown }) {
    super(message, { cause: options.cause });
    this.status = options.status;
    this.code = options.code;
    this.retryAfterS = options.retryAfterS;
    this.details = options.details;
  }

  /** Worth retrying as is (later): over quota, server trouble, or no response at all. */
  get isRetryable(): boolean {
    return this.status === 0 || this.status === 429 || this.status >= 500;
  }
}

type ErrorData = { code?: string; httpStatus?: number; appCode?: string | null; details?: Record<string, unknown> | null; retryAfterS?: number | null };

const parseRetryAfter = (value: string | null | undefined): number | undefined => {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
};

/** Turns whatever a call threw into a ProducerError. */
const toProducerError = (error: unknown): ProducerError => {
  if (error instanceof ProducerError) return error;
  if (error instanceof TRPCClientError) {
    const data = (error.data ?? {}) as ErrorData;
    const response = (error.meta as { response?: Pick<Reply, "status" | "headers"> } | undefined)?.response;
    const status = data.httpStatus ?? response?.status ?? 0;
    return new ProducerError(error.message, {
      status,
      code: data.appCode ?? data.code ?? (status === 0 ? "NETWORK_ERROR" : `HTTP_${status}`),
      retryAfterS: data.retryAfterS ?? parseRetryAfter(response?.headers.get("retry-after")),
      details: data.details ?? undefined,
      cause: error,
    });
  }
  return new ProducerError(error instanceof Error ? error.message : String(error), { status: 0, code: "NETWORK_ERROR", cause: error });
};

/**
 * The JSON of a reply. A non-JSON error response (a proxy's 502 page, say) becomes a tRPC-shaped
 * one, so its status and Retry-After survive into the ProducerError instead of a JSON parse failure.
 */
const replyJson = (reply: Reply): unknown => {
  if (reply.ok || (reply.headers.get("content-type") ?? "").includes("application/json")) return JSON.parse(reply.text);
  const data: ErrorData = {
    code: `HTTP_${reply.status}`,
    httpStatus: reply.status,
    appCode: null,
    details: null,
    retryAfterS: parseRetryAfter(reply.headers.get("retry-after")) ?? null,
  };
  return { error: { message: `HTTP ${reply.status} ${reply.statusText}`.trim(), code: -32603, data } };
};

/** Plain JSON on the wire: the server has no transformer. */
const IDENTITY = { serialize: (value: unknown) => value, deserialize: (value: unknown) => value };

type Inputs = inferRouterInputs<AppRouter>["producer"];
type Outputs = inferRouterOutputs<AppRouter>["producer"];

/**
 * The traceparent header of an enqueue call: the caller's (checked here, so a bad one fails before
 * any request), else the active span's context (OpenTelemetry's W3C propagation, without needing
 * a propagator registered), else none.
 */
export const callTraceparent = (options: EnqueueCallOptions | undefined): string | undefined => {
  if (options?.traceparent !== undefined) {
    if (!ZTraceparent.safeParse(options.traceparent).success) {
      throw new ProducerError(`invalid traceparent option: ${options.traceparent}`, { status: 400, code: "BAD_REQUEST", details: { option: "traceparent" } });
    }
    return options.traceparent;
  }
  const active = trace.getActiveSpan()?.spanContext();
  return active && trace.isSpanContextValid(active)
    ? formatTraceparent({ traceId: active.traceId, spanId: active.spanId, flags: active.traceFlags })
    : undefined;
};

/** Most enqueue calls one HTTP request carries (at most the API's `maxBatchSize`, 50): at 32 concurrent callers, 16 kept two requests in flight and beat 8 and 50 (http-split.ts). */
const MAX_JOINED_CALLS = 16;
/** Most characters of enqueue bodies joined in one request (well under any sane body limit: a server's PORTER_MAX_BODY_BYTES is 8 MiB by default); a call larger than this goes alone. */
const MAX_JOINED_BYTES = 64 * 1024;
/** After the calls of this turn of the event loop (setImmediate on Node; a timer elsewhere). */
const afterThisTurn: (fn: () => void) => void = typeof setImmediate === "function" ? (fn) => void setImmediate(fn) : (fn) => void setTimeout(fn, 0);

type Transformed = ReturnType<typeof transformResult>;
/** An enqueue call waiting to be sent: its JSON body and what to do with its reply item. */
type Joined = {
  body: string;
  settle: (
    reply:
      | { transformed: Transformed; meta: { response: Reply; responseJSON: unknown } }
      | { cause: unknown; meta?: { response: Reply; responseJSON: unknown } },
  ) => void;
};

/**
 * A typed client of the producer API (tRPC over plain JSON). Queries are GETs, mutations POSTs.
 * A call is what tRPC's httpLink sends (`POST <endpoint>/producer.enqueue` with the input as the
 * JSON body; `GET <endpoint>/producer.get?input=<JSON>`), and its reply is read as httpLink reads
 * it (tRPC's `transformResult`, errors as `TRPCClientError`), without tRPC's client machinery per
 * call; see transport.ts for how it is sent.
 *
 * Single enqueues made in the same turn of the event loop (concurrent producers of one process)
 * go in one HTTP request, in tRPC's own batch format — what httpBatchLink sends:
 * `POST <endpoint>/producer.enqueue,producer.enqueue?batch=1` with `{"0": input, "1": input}` —
 * at most 16 calls or 64 KB of bodies per request, calls with the same traceparent only. Each
 * call is still its own procedure call on the server (its own key check and rate-limit token, its
 * own validation, its own job: not the all-or-nothing of `enqueueBatch`) and gets its own reply
 * item, read as a lone call's reply is: the same result, the same ProducerError. A lone call
 * goes as a plain request. `joinEnqueues: false` sends every call on its own.
 */
export const createProducerClient = (options: ProducerClientOptions): ProducerClient => {
  const base = options.url.replace(/\/+$/, "");
  const url = base.endsWith("/api/trpc") ? base : `${base}/api/trpc`;
  // As httpLink's URL: the endpoint's own query string (if any) kept after the path.
  const [endpoint, endpointQuery] = url.split("?", 2) as [string, string | undefined];
  const send: Send = options.fetch ? fetchSend(options.fetch) : nodeSend;
  const authorization = `Bearer ${options.apiKey}`;
  const isJoining = options.joinEnqueues ?? true;
  const root = endpoint.replace(/\/$/, "");

  const headersOf = (type: "query" | "mutation", traceparent: string | undefined): Record<string, string> => {
    const headers: Record<string, string> = type === "mutation" ? { "content-type": "application/json", authorization } : { authorization };
    if (traceparent !== undefined) headers.traceparent = traceparent;
    return headers;
  };
  /** A reply item (or a lone call's reply) as httpLink reads it: its data, or the TRPCClientError. */
  const outcome = <T>(transformed: Transformed, meta: { response: Reply; responseJSON: unknown }): T => {
    if (!transformed.ok) throw TRPCClientError.from(transformed.error, { meta });
    return (transformed.result as { data: T }).data;
  };

  const procedure = async <P extends keyof Inputs>(type: "query" | "mutation", path: P, input: Inputs[P], traceparent?: string): Promise<Outputs[P]> => {
    const query = [];
    if (endpointQuery) query.push(endpointQuery);
    if (type === "query") query.push(`input=${encodeURIComponent(JSON.stringify(input))}`);
    const target = `${root}/producer.${path}${query.length > 0 ? `?${query.join("&")}` : ""}`;
    let meta: { response: Reply; responseJSON: unknown } | undefined;
    let transformed: Transformed;
    try {
      const reply = await send(
        type === "query" ? "GET" : "POST",
        target,
        headersOf(type, traceparent),
        type === "mutation" ? JSON.stringify(input) : undefined,
      );
      const json = replyJson(reply);
      meta = { response: reply, responseJSON: json };
      transformed = transformResult(json as Parameters<typeof transformResult>[0], IDENTITY);
    } catch (cause) {
      throw TRPCClientError.from(cause as Error, { meta });
    }
    return outcome<Outputs[P]>(transformed, meta);
  };

  // Enqueue calls of this turn, by traceparent ("" for none), sent together after it.
  const waiting = new Map<string, Joined[]>();
  /** Sends `calls` (of one traceparent) as one request: a plain one for a lone call, else a tRPC batch. */
  const sendJoined = async (calls: Joined[], traceparent: string | undefined): Promise<void> => {
    const isBatch = calls.length > 1;
    const query = endpointQuery ? [endpointQuery] : [];
    if (isBatch) query.push("batch=1");
    const target = `${root}/${isBatch ? calls.map(() => "producer.enqueue").join(",") : "producer.enqueue"}${query.length > 0 ? `?${query.join("&")}` : ""}`;
    const body = isBatch ? `{${calls.map((c, i) => `"${i}":${c.body}`).join(",")}}` : calls[0]!.body;
    let meta: { response: Reply; responseJSON: unknown } | undefined;
    try {
      const reply = await send("POST", target, headersOf("mutation", traceparent), body);
      const json = replyJson(reply);
      meta = { response: reply, responseJSON: json };
      // A batch's reply is an array of an item per call; one error for the whole request (a proxy's
      // error page becomes one) answers every call; anything else is no answer.
      const items = isBatch && Array.isArray(json) && json.length === calls.length ? json : undefined;
      const isWholeError = isBatch && !items && typeof json === "object" && json !== null && "error" in json;
      if (isBatch && reply.status === 413) {
        // The joined body is over the server's limit (a PORTER_MAX_BODY_BYTES below 64 KB): each
        // call again on its own, answered as it would have been had it never been joined (one
        // over the limit alone gets its own 413).
        await Promise.all(calls.map((call) => sendJoined([call], traceparent)));
        return;
      }
      if (isBatch && !items && !isWholeError) throw new Error(`the reply to ${calls.length} joined calls is not ${calls.length} items`);
      calls.forEach((call, i) => {
        let transformed: Transformed;
        try {
          transformed = transformResult((items ? items[i] : json) as Parameters<typeof transformResult>[0], IDENTITY);
        } catch (cause) {
          call.settle({ cause, meta });
          return;
        }
        call.settle({ transformed, meta: meta! });
      });
    } catch (cause) {
      for (const call of calls) call.settle({ cause, meta });
    }
  };
  const flush = (key: string): void => {
    const calls = waiting.get(key)!;
    waiting.delete(key);
    const traceparent = key === "" ? undefined : key;
    let group: Joined[] = [];
    let bytes = 0;
    for (const call of calls) {
      if (call.body.length > MAX_JOINED_BYTES) {
        void sendJoined([call], traceparent);
        continue;
      }
      if (group.length > 0 && (group.length === MAX_JOINED_CALLS || bytes + call.body.length > MAX_JOINED_BYTES)) {
        void sendJoined(group, traceparent);
        group = [];
        bytes = 0;
      }
      group.push(call);
      bytes += call.body.length;
    }
    if (group.length > 0) void sendJoined(group, traceparent);
  };
  const joinedEnqueue = (request: TEnqueueRequest, traceparent: string | undefined): Promise<TEnqueueResult> =>
    new Promise<TEnqueueResult>((resolve, reject) => {
      const key = traceparent ?? "";
      const settle: Joined["settle"] = (reply) => {
        try {
          if ("cause" in reply) throw TRPCClientError.from(reply.cause as Error, { meta: reply.meta });
          resolve(outcome<TEnqueueResult>(reply.transformed, reply.meta));
        } catch (error) {
          reject(error);
        }
      };
      const calls = waiting.get(key);
      if (calls) calls.push({ body: JSON.stringify(request), settle });
      else {
        waiting.set(key, [{ body: JSON.stringify(request), settle }]);
        afterThisTurn(() => flush(key));
      }
    });

  const call = async <T>(fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (error) {
      throw toProducerError(error);
    }
  };
  return {
    enqueue: (request, callOptions) =>
      call(() => (isJoining ? joinedEnqueue(request, callTraceparent(callOptions)) : procedure("mutation", "enqueue", request, callTraceparent(callOptions)))),
    enqueueBatch: (jobs, callOptions) => call(async () => (await procedure("mutation", "enqueueBatch", { jobs }, callTraceparent(callOptions))).results),
    // The server validates the output with ZJobStatus; tRPC's JSON typing only loosens `unknown`
    // fields (result, last_checkpoint) to optional ones.
    get: (jobId) => call(async () => (await procedure("query", "get", { job_id: jobId })) as TJobStatus),
    cancel: (jobId, reason) => call(() => procedure("mutation", "cancel", reason === undefined ? { job_id: jobId } : { job_id: jobId, reason })),
    watch: (jobId, watchOptions) => watchJob(options, jobId, watchOptions),
    waitFor: (jobId, waitOptions) => waitForJob(options, jobId, waitOptions),
  };
};
