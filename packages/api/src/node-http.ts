import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { DEFAULT_MAX_PAYLOAD_BYTES } from "@porter/contracts";
import { callTRPCProcedure, getErrorShape, getTRPCErrorFromUnknown, TRPCError, transformTRPCResponse } from "@trpc/server";
import { getHTTPStatusCode } from "@trpc/server/http";
import { type Context, clientAddressOf, type RequestHead } from "./context";
import { bodyTooLargeJson, DEFAULT_MAX_BODY_BYTES, handleTrpcRequest, retryAfterOf, type TrpcHttpDeps } from "./http";
import { appRouter } from "./root";

/** A node:http request listener for `/api/trpc/*` (see {@link createNodeTrpcHandler}). */
export type NodeTrpcHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** The producer procedures served on the direct path, and their tRPC types. */
const PRODUCER_PROCEDURES: Readonly<Record<string, "mutation" | "query">> = {
  "producer.enqueue": "mutation",
  "producer.enqueueBatch": "mutation",
  "producer.cancel": "mutation",
  "producer.get": "query",
};

/**
 * Serves tRPC from a node:http server — the producer API's own server (`porter-start`'s front on
 * `PORT`, the tests' and the bench's server). The producer procedures in their plain form (a POST
 * of one mutation with a JSON body, a GET of `producer.get` with `?input=`) take a direct path:
 * the body is read as bytes, the procedure is called through tRPC itself (`callTRPCProcedure`:
 * the same middlewares — key authentication, the AppError mapping — input and output validation)
 * and the reply is written with tRPC's own error shape (`getErrorShape`, our errorFormatter) and
 * status (`getHTTPStatusCode`) — no fetch Request/Response, web streams or abort signals per call.
 * So do batch calls of producer mutations (`isProducerBatch`: the SDK's joined enqueues).
 * Everything else — other batch calls, other content types, streaming accepts, console
 * procedures — goes through `handleTrpcRequest` (tRPC's fetch adapter), as before. Both paths give
 * the same bytes for the same call (`node-http.int.test.ts` compares them; `isDirect: false`
 * sends every request through the fetch path, for that comparison).
 */
export const createNodeTrpcHandler = (deps: TrpcHttpDeps, options: { isDirect?: boolean } = {}): NodeTrpcHandler => {
  const isDirect = options.isDirect ?? true;
  const endpoint = deps.endpoint ?? "/api/trpc";
  const maxBodyBytes = deps.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  return async (req, res) => {
    try {
      const url = req.url ?? "/";
      const q = url.indexOf("?");
      const pathname = q === -1 ? url : url.slice(0, q);
      const path = pathname.startsWith(`${endpoint}/`) ? pathname.slice(endpoint.length + 1) : undefined;
      const type = path === undefined ? undefined : PRODUCER_PROCEDURES[path];
      if (isDirect && type && path && isPlainCall(req, type, url, q)) {
        await serveProducer(req, res, deps, { path, type, url, q, maxBodyBytes });
        return;
      }
      if (isDirect && path !== undefined && isProducerBatch(req, path, url, q)) {
        await serveProducerBatch(req, res, deps, { path, url, maxBodyBytes });
        return;
      }
      await serveThroughFetch(req, res, deps);
    } catch {
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: "internal server error" } }));
    }
  };
};

/**
 * A call of the direct path: one procedure (no batch), JSON, no streaming accept — a POST without a
 * query string for a mutation, a GET with at most `input` for a query.
 */
const isPlainCall = (req: IncomingMessage, type: "mutation" | "query", url: string, q: number): boolean => {
  if (req.headers["trpc-accept"] !== undefined || req.headers.accept?.includes("application/jsonl")) return false;
  if (type === "mutation") {
    const contentType = req.headers["content-type"];
    return req.method === "POST" && q === -1 && contentType !== undefined && contentType.split(";", 1)[0]!.trim().toLowerCase() === "application/json";
  }
  if (req.method !== "GET" || req.headers["content-type"] !== undefined) return false;
  if (q === -1) return true;
  const params = new URLSearchParams(url.slice(q + 1));
  for (const name of params.keys()) if (name !== "input") return false;
  return params.getAll("input").length <= 1;
};

/** tRPC's fetch adapter's `maxBatchSize` (http.ts): a longer batch goes there for its 400. */
const MAX_BATCH_CALLS = 50;

/**
 * A batch call of the direct path: `POST <endpoint>/a,b,…?batch=1` (nothing else in the query),
 * JSON, no streaming accept, every path a producer mutation, at most 50 of them — what the SDK
 * sends for single enqueues made together (and tRPC's httpBatchLink for mutations).
 */
const isProducerBatch = (req: IncomingMessage, path: string, url: string, q: number): boolean => {
  if (req.method !== "POST" || q === -1 || url.slice(q + 1) !== "batch=1") return false;
  if (req.headers["trpc-accept"] !== undefined || req.headers.accept?.includes("application/jsonl")) return false;
  const contentType = req.headers["content-type"];
  if (contentType === undefined || contentType.split(";", 1)[0]!.trim().toLowerCase() !== "application/json") return false;
  const paths = path.split(",");
  return paths.length <= MAX_BATCH_CALLS && paths.every((p) => PRODUCER_PROCEDURES[p] === "mutation");
};

// Functions made per call below are methods (`get() {}`), not named arrows: under tsx (which
// `npm start` runs) each named closure is wrapped at creation in esbuild's keepNames helper, a
// defineProperty of its name (≈ 1 µs each).

/** The headers of an IncomingMessage as `RequestHead.headers` (names are lower-case there). */
const headersOf = (req: IncomingMessage, forwardedFor: string | undefined): RequestHead["headers"] => ({
  get(name: string) {
    const lower = name.toLowerCase();
    if (lower === "x-forwarded-for" && forwardedFor !== undefined) return forwardedFor;
    const value = req.headers[lower];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(lower === "cookie" ? "; " : ", ") : value;
  },
});

const serveProducer = async (
  req: IncomingMessage,
  res: ServerResponse,
  deps: TrpcHttpDeps,
  call: { path: string; type: "mutation" | "query"; url: string; q: number; maxBodyBytes: number },
): Promise<void> => {
  let text: string | undefined;
  if (call.type === "mutation") {
    const body = await readBodyCapped(req, call.maxBodyBytes);
    if (body === null) {
      const json = bodyTooLargeJson(call.path, false, call.maxBodyBytes);
      res.writeHead(413, { "content-type": "application/json", connection: "close" });
      res.end(json);
      return;
    }
    // As fetch's Request.json(): UTF-8, a leading byte order mark dropped.
    text = body.toString("utf8");
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  } else if (call.q !== -1) {
    text = new URLSearchParams(call.url.slice(call.q + 1)).get("input") || undefined;
  }

  const ctx = contextOf(req, deps, call.url);

  // The input is parsed when a procedure asks for it — after key authentication, as tRPC does —
  // and a body that is not JSON is the 400 tRPC gives (its message is JSON.parse's). The parsed
  // value is not kept here: the validated input is what the procedure holds through its database round
  // trip, and a 1000-job body's raw copy kept beside it lived long enough to be promoted out of
  // V8's young generation on every call (docs/performance.md, "Fourth pass"). Asked twice (no
  // procedure here does), the text is parsed again.
  const input = {
    async getRaw(): Promise<unknown> {
      if (text === undefined) return undefined;
      try {
        return JSON.parse(text);
      } catch (cause) {
        throw new TRPCError({ code: "BAD_REQUEST", message: cause instanceof Error ? cause.message : "Invalid input", cause });
      }
    },
  };

  const config = appRouter._def._config;
  let status = 200;
  let json: string;
  let retryAfter: string | undefined;
  try {
    const data = await callProcedure({
      router: appRouter,
      path: call.path,
      getRawInput: input.getRaw,
      ctx,
      type: call.type,
      signal: undefined,
      batchIndex: 0,
    });
    json = JSON.stringify(transformTRPCResponse(config, { result: { data } }));
  } catch (cause) {
    const error = getTRPCErrorFromUnknown(cause);
    deps.onError?.({ error, path: call.path, type: call.type });
    // Our error shape never shows the input (errorFormatter, trpc.ts): none is kept to pass here.
    const untransformed = { error: getErrorShape({ config, error, type: call.type, path: call.path, input: undefined, ctx }) };
    status = getHTTPStatusCode(untransformed);
    retryAfter = retryAfterOf([error]);
    json = JSON.stringify(transformTRPCResponse(config, untransformed));
  }
  const headers: Record<string, string | string[]> = { vary: "trpc-accept, accept", "content-type": "application/json" };
  for (const [name, value] of ctx.resHeaders) headers[name] = value;
  if (retryAfter) headers["retry-after"] = retryAfter;
  res.writeHead(status, headers);
  res.end(json);
  if (call.type === "mutation" && status < 400) deps.streamNotifier?.touch();
};

/** The context of a direct-path request: as createContext's for a producer call (no console session). */
const contextOf = (req: IncomingMessage, deps: TrpcHttpDeps, url: string): Context => {
  // As Next's server does (and the fetch path's tests): the socket's address when the request
  // brought no X-Forwarded-For.
  const forwardedFor = req.headers["x-forwarded-for"] === undefined ? req.socket.remoteAddress : undefined;
  const head: RequestHead = {
    method: req.method ?? "GET",
    url: `http://${req.headers.host ?? "127.0.0.1"}${url}`,
    headers: headersOf(req, forwardedFor),
  };
  return {
    req: head,
    resHeaders: new Headers(),
    db: deps.db,
    prisma: deps.prisma,
    policyCache: deps.policyCache,
    maxPayloadBytes: deps.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES,
    apiKey: null,
    // Producer procedures authenticate with their key; a console session is never read here.
    session: null,
    trustedOrigins: deps.trustedOrigins ?? [],
    clientAddress: (deps.getClientAddress ?? clientAddressOf)(head),
    keyAuthLimits: deps.keyAuthLimits ?? {},
    keyAuthCache: deps.keyAuthCache,
  };
};

/**
 * A producer batch call (`isProducerBatch`), as tRPC's fetch adapter answers it: the body parsed
 * once into `{ "0": input, … }`, every call run through `callTRPCProcedure` at once with the
 * request's one context (its own key check, validation and procedure), the reply an array of
 * each call's result or error shape in order, the status tRPC's (`getHTTPStatusCode`: the common
 * one, 207 when they differ), Retry-After the longest a 429 or 503 asks. A body that is not a JSON
 * object (tRPC answers every call with the same error) goes through the fetch adapter as it came.
 */
const serveProducerBatch = async (
  req: IncomingMessage,
  res: ServerResponse,
  deps: TrpcHttpDeps,
  call: { path: string; url: string; maxBodyBytes: number },
): Promise<void> => {
  const body = await readBodyCapped(req, call.maxBodyBytes);
  if (body === null) {
    res.writeHead(413, { "content-type": "application/json", connection: "close" });
    res.end(bodyTooLargeJson(call.path, true, call.maxBodyBytes));
    return;
  }
  let text = body.toString("utf8");
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  let inputs: unknown;
  try {
    inputs = JSON.parse(text);
  } catch {
    inputs = undefined;
  }
  if (inputs === null || typeof inputs !== "object" || Array.isArray(inputs)) {
    await serveThroughFetch(req, res, deps, body);
    return;
  }
  const paths = call.path.split(",");
  const ctx = contextOf(req, deps, call.url);
  const config = appRouter._def._config;
  const errors: TRPCError[] = [];
  const items = await Promise.all(
    paths.map(async (path, index) => {
      const input = (inputs as Record<string, unknown>)[index];
      try {
        const data = await callProcedure({
          router: appRouter,
          path,
          getRawInput: async () => input,
          ctx,
          type: "mutation",
          signal: undefined,
          batchIndex: index,
        });
        return { result: { data } };
      } catch (cause) {
        const error = getTRPCErrorFromUnknown(cause);
        errors.push(error);
        deps.onError?.({ error, path, type: "mutation" });
        return { error: getErrorShape({ config, error, type: "mutation", path, input, ctx }) };
      }
    }),
  );
  const status = getHTTPStatusCode(items);
  const retryAfter = retryAfterOf(errors);
  const headers: Record<string, string | string[]> = { vary: "trpc-accept, accept", "content-type": "application/json" };
  for (const [name, value] of ctx.resHeaders) headers[name] = value;
  if (retryAfter) headers["retry-after"] = retryAfter;
  res.writeHead(status, headers);
  res.end(JSON.stringify(transformTRPCResponse(config, items)));
  if (status < 400) deps.streamNotifier?.touch();
};

type ProcedureCall = Parameters<typeof callTRPCProcedure>[0];
type ChainOptions = ProcedureCall & { input?: unknown };
type ChainResult = { ok: true; data: unknown } | { ok: false; error: TRPCError; marker?: string };
type Middleware = (opts: Record<string, unknown>) => Promise<ChainResult>;
type ProcedureDef = { type: string; meta: unknown; middlewares: Middleware[] };

/**
 * A producer procedure called as `callTRPCProcedure` calls it — its own middlewares in order
 * (baseProcedure's AppError mapping, the key check, input validation, output validation, the
 * resolver), each given what tRPC's `callRecursive` gives it (the call's options, `meta`, `input`,
 * `next`; `next({ ctx })` merges into a copy of ctx; a throw becomes `{ ok: false, error }`) — but
 * the options copied with object spread rather than tRPC's `_objectSpread2`, whose
 * defineProperty-per-key copies of the options (twice per middleware) were ≈ 6% of the producer
 * server's CPU (perf, c=32). A path that is not a procedure of that type goes to tRPC's own call.
 */
const callProcedure = async (opts: ProcedureCall): Promise<unknown> => {
  const procedure = (appRouter._def.procedures as unknown as Record<string, { _def: ProcedureDef } | undefined>)[opts.path];
  if (!procedure || procedure._def.type !== opts.type) return callTRPCProcedure(opts);
  const result = await callChain(procedure._def, 0, opts);
  if (!result) throw new TRPCError({ code: "INTERNAL_SERVER_ERROR", message: "No result from middlewares - did you forget to `return next()`?" });
  if (!result.ok) throw result.error;
  return result.data;
};

const callChain = async (def: ProcedureDef, index: number, opts: ChainOptions): Promise<ChainResult> => {
  try {
    const middleware = def.middlewares[index]!;
    return await middleware({
      ...opts,
      meta: def.meta,
      input: opts.input,
      next(nextOpts?: { ctx?: Record<string, unknown>; input?: unknown; getRawInput?: ProcedureCall["getRawInput"] }) {
        return callChain(def, index + 1, {
          ...opts,
          ctx: nextOpts?.ctx ? { ...(opts.ctx as Record<string, unknown>), ...nextOpts.ctx } : opts.ctx,
          input: nextOpts && "input" in nextOpts ? nextOpts.input : opts.input,
          getRawInput: nextOpts?.getRawInput ?? opts.getRawInput,
        });
      },
    });
  } catch (cause) {
    return { ok: false, error: getTRPCErrorFromUnknown(cause), marker: "middlewareMarker" };
  }
};

/** The body as one Buffer, or null once it passes `limit` (by Content-Length, or while it streams in). */
const readBodyCapped = (req: IncomingMessage, limit: number): Promise<Buffer | null> => {
  const declared = Number(req.headers["content-length"]);
  // Past the limit we answer at once and leave the rest unread (the 413 closes the connection).
  if (Number.isFinite(declared) && declared > limit) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const on = {
      data(chunk: Buffer) {
        size += chunk.byteLength;
        if (size > limit) {
          on.cleanup();
          resolve(null);
          return;
        }
        chunks.push(chunk);
      },
      end() {
        on.cleanup();
        resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
      },
      error(error: Error) {
        on.cleanup();
        reject(error);
      },
      cleanup() {
        req.off("data", on.data);
        req.off("end", on.end);
        req.off("error", on.error);
      },
    };
    req.on("data", on.data);
    req.on("end", on.end);
    req.on("error", on.error);
  });
};

/** Any other request: as a fetch Request through `handleTrpcRequest` (tRPC's fetch adapter). */
const serveThroughFetch = async (req: IncomingMessage, res: ServerResponse, deps: TrpcHttpDeps, read?: Buffer): Promise<void> => {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (Array.isArray(value)) {
      for (const v of value) headers.append(name, v);
    } else if (value !== undefined) headers.set(name, value);
  }
  // As Next's server does: the socket's address when the request brought no X-Forwarded-For.
  if (!headers.has("x-forwarded-for") && req.socket.remoteAddress) headers.set("x-forwarded-for", req.socket.remoteAddress);
  const hasBody = req.method !== "GET" && req.method !== "HEAD";
  const request = new Request(`http://${req.headers.host ?? "127.0.0.1"}${req.url ?? "/"}`, {
    method: req.method,
    headers,
    body: read ?? (hasBody ? (Readable.toWeb(req) as unknown as ReadableStream<Uint8Array>) : undefined),
    duplex: "half",
  } as RequestInit);
  const response = await handleTrpcRequest(request, deps);
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of response.headers) out[name] = value;
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) out["set-cookie"] = cookies;
  res.writeHead(response.status, out);
  res.end(Buffer.from(await response.arrayBuffer()));
};
