import {
  authenticateApiKey,
  type KeyAuthLimits,
  parseCursor,
  type StreamCursor,
  type StreamHub,
  type StreamRow,
  statusLinkById,
  streamEventData,
  streamEventName,
} from "@porter/core";
import type { ControlDb } from "@porter/db/prisma";
import type pg from "pg";
import { z } from "zod";
import { clientAddressOf } from "../context";

// The live status stream over Server-Sent Events (issue 13): `GET /api/events` (a producer key)
// and `GET /status/<tenant_id>/events` (the status link cookie, or an operator session). Framework-
// free: the console's route handlers and the tests' node:http server both call these with a fetch
// Request and stream the returned Response. Events come from the process's one StreamHub.

/** Keep-alive comment interval (proxies drop idle connections). */
export const SSE_KEEPALIVE_MS = 15_000;
/** How often a stream re-checks its credential (a revoked key or link ends the stream). */
export const SSE_RECHECK_MS = 30_000;
/** Streams one credential (key id or link id) may hold at once in one process. */
export const DEFAULT_SSE_MAX_PER_CREDENTIAL = 20;
/** The client's reconnect delay (the SSE `retry:` field). */
export const SSE_RETRY_MS = 2000;

export type EventsDeps = {
  db: pg.Pool;
  hub: StreamHub;
  limiter: StreamLimiter;
  keyAuthLimits?: Partial<KeyAuthLimits>;
  getClientAddress?: (req: Request) => string | null;
  keepAliveMs?: number;
  recheckMs?: number;
};

/** Who a stream is for: the credential (its concurrency slot), the tenant, the job types (null: all). */
export type StreamCredential = { id: string; tenantId: string; jobTypes: readonly string[] | null; recheck: () => Promise<boolean> };

/** Per-credential concurrent streams in this process (PORTER_SSE_MAX_PER_CREDENTIAL). */
export class StreamLimiter {
  private readonly open = new Map<string, number>();
  constructor(readonly max = DEFAULT_SSE_MAX_PER_CREDENTIAL) {}
  /** Takes a slot, or returns null when the credential holds `max` streams already. */
  acquire(id: string): (() => void) | null {
    const n = this.open.get(id) ?? 0;
    if (n >= this.max) return null;
    this.open.set(id, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(id) ?? 1) - 1;
      if (left <= 0) this.open.delete(id);
      else this.open.set(id, left);
    };
  }
  count(id: string): number {
    return this.open.get(id) ?? 0;
  }
}

const json = (status: number, code: string, message: string, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ error: { code, message } }), {
    status,
    headers: { "content-type": "application/json", "cache-control": "no-store", ...headers },
  });
const notFound = () => json(404, "NOT_FOUND", "no such job");

const ZJobIdParam = z.uuid();

type Parsed = { jobId?: string; lastEventId?: StreamCursor; tenantId?: string } | Response;
const parseRequest = (request: Request): Parsed => {
  const url = new URL(request.url);
  const out: { jobId?: string; lastEventId?: StreamCursor; tenantId?: string } = {};
  const jobId = url.searchParams.get("job_id");
  if (jobId !== null) {
    const parsed = ZJobIdParam.safeParse(jobId);
    if (!parsed.success) return json(400, "BAD_REQUEST", "job_id must be a job's UUID");
    out.jobId = parsed.data.toLowerCase();
  }
  // EventSource sends Last-Event-ID on reconnects; a first connection may pass ?last_event_id=.
  const last = request.headers.get("last-event-id") ?? url.searchParams.get("last_event_id");
  if (last !== null && last !== "") {
    const cursor = parseCursor(last);
    if (!cursor) return json(400, "BAD_REQUEST", "Last-Event-ID is not an id this stream gave out");
    out.lastEventId = cursor;
  }
  const tenant = url.searchParams.get("tenant_id");
  if (tenant !== null) out.tenantId = tenant;
  return out;
};

/** Whether the job exists, is the tenant's, and is of a type the credential may see. */
const jobInScope = async (db: pg.Pool, jobId: string, tenantId: string, jobTypes: readonly string[] | null): Promise<boolean> => {
  const { rows } = await db.query<{ job_type: string }>(
    `SELECT job_type FROM jobs WHERE job_id = $1::uuid AND tenant_id = $2
     UNION ALL SELECT job_type FROM finished_jobs WHERE job_id = $1::uuid AND tenant_id = $2 LIMIT 1`,
    [jobId, tenantId],
  );
  return rows.length > 0 && (jobTypes === null || jobTypes.includes(rows[0]!.job_type));
};

const frame = (row: StreamRow, id?: string): string => {
  const data = streamEventData(row, id);
  return `id: ${data.id}\nevent: ${streamEventName(row)}\ndata: ${JSON.stringify(data)}\n\n`;
};

/**
 * Streams a credential's events: 404 for a job outside its tenant or job types, 429 (Retry-After)
 * past the per-credential limit, else `text/event-stream` — `retry: 2000`, then events
 * (`id: <xid>-<id>`, `event: job.<state>|job.progress`, `data: <ZStreamEventData>`), `: ka`
 * every 15 s; the credential re-checked every 30 s (refused → the stream ends). A Last-Event-ID
 * older than the log's retention gets `event: reset` and a snapshot.
 */
export const serveEventStream = async (
  request: Request,
  credential: StreamCredential,
  params: { jobId?: string; lastEventId?: StreamCursor },
  deps: EventsDeps,
): Promise<Response> => {
  if (params.jobId && !(await jobInScope(deps.db, params.jobId, credential.tenantId, credential.jobTypes))) return notFound();
  const release = deps.limiter.acquire(credential.id);
  if (!release) return json(429, "TOO_MANY_REQUESTS", `at most ${deps.limiter.max} concurrent streams per credential`, { "retry-after": "5" });
  const encoder = new TextEncoder();
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let done = false;
  const timers: NodeJS.Timeout[] = [];
  let subscription: { close: () => void } | null = null;
  const finish = () => {
    if (done) return;
    done = true;
    for (const t of timers) clearInterval(t);
    subscription?.close();
    release();
    request.signal.removeEventListener("abort", finish);
  };
  const write = (text: string) => {
    if (done) return;
    try {
      controller.enqueue(encoder.encode(text));
    } catch {
      finish();
    }
  };
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
    cancel() {
      finish();
    },
  });
  request.signal.addEventListener("abort", finish);
  write(`retry: ${SSE_RETRY_MS}\n\n`);
  try {
    const sub = await deps.hub.subscribe(
      { tenantId: credential.tenantId, jobTypes: credential.jobTypes, jobId: params.jobId },
      {
        lastEventId: params.lastEventId,
        onEvent: (row, id) => write(frame(row, id)),
        onReset: () => write(`event: reset\ndata: {}\n\n`),
      },
    );
    if (done) sub.close();
    else subscription = sub;
  } catch {
    finish();
    return json(503, "SERVICE_UNAVAILABLE", "the status stream is unavailable; retry", { "retry-after": "2" });
  }
  timers.push(setInterval(() => write(": ka\n\n"), deps.keepAliveMs ?? SSE_KEEPALIVE_MS));
  timers.push(
    setInterval(() => {
      credential.recheck().then(
        (ok) => {
          if (ok || done) return;
          finish();
          try {
            controller.close();
          } catch {}
        },
        () => {},
      );
    }, deps.recheckMs ?? SSE_RECHECK_MS),
  );
  for (const t of timers) t.unref?.();
  return new Response(body, {
    status: 200,
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      // no-transform: Next's compression (and any proxy honouring it) leaves the stream unbuffered.
      "cache-control": "no-store, no-transform",
      "x-accel-buffering": "no",
      connection: "keep-alive",
    },
  });
};

/**
 * `GET /api/events[?job_id=][&tenant_id=]`: a producer key (`Authorization: Bearer`), authenticated
 * and rate-charged as producer calls are; the stream is of the key's tenant (`tenant_id` picks one
 * when the key has several; a job's own tenant with `job_id`) and job types.
 */
export const handleProducerEvents = async (request: Request, deps: EventsDeps): Promise<Response> => {
  const parsed = parseRequest(request);
  if (parsed instanceof Response) return parsed;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.get("authorization") ?? "");
  if (!match) return json(401, "UNAUTHORIZED", "missing API key: send Authorization: Bearer <key>");
  const address = (deps.getClientAddress ?? clientAddressOf)(request);
  const auth = await authenticateApiKey(deps.db, { presented: match[1]!, address, limits: deps.keyAuthLimits });
  if (auth.outcome === "invalid") return json(401, "UNAUTHORIZED", "invalid or revoked API key");
  if (auth.outcome !== "ok") return json(429, "TOO_MANY_REQUESTS", `retry after ${auth.retryAfterS} s`, { "retry-after": String(auth.retryAfterS) });
  const { scope } = auth;
  const jobTypes = scope.jobTypes.includes("*") ? null : scope.jobTypes;
  let tenantId: string | undefined;
  if (parsed.jobId) {
    const { rows } = await deps.db.query<{ tenant_id: string }>(
      `SELECT tenant_id FROM jobs WHERE job_id = $1::uuid UNION ALL SELECT tenant_id FROM finished_jobs WHERE job_id = $1::uuid LIMIT 1`,
      [parsed.jobId],
    );
    tenantId = rows[0]?.tenant_id;
    if (!tenantId || !scope.tenantIds.includes(tenantId) || (parsed.tenantId !== undefined && parsed.tenantId !== tenantId)) return notFound();
  } else if (parsed.tenantId !== undefined) {
    if (!scope.tenantIds.includes(parsed.tenantId)) return json(403, "FORBIDDEN", "this key is not for that tenant");
    tenantId = parsed.tenantId;
  } else if (scope.tenantIds.length === 1) {
    tenantId = scope.tenantIds[0]!;
  } else {
    return json(400, "BAD_REQUEST", "this key is for several tenants: pass tenant_id");
  }
  const keyId = scope.id;
  return serveEventStream(
    request,
    {
      id: `key:${keyId}`,
      tenantId,
      jobTypes,
      recheck: async () => ((await deps.db.query(`SELECT 1 FROM api_keys WHERE id = $1 AND revoked_at IS NULL`, [keyId])).rowCount ?? 0) > 0,
    },
    parsed,
    deps,
  );
};

/**
 * `GET /status/<tenant_id>/events[?job_id=]`: the status link whose id the (verified) status cookie
 * carries — active and of this tenant, re-checked every 30 s — else an operator's console session;
 * anything else is 404, as the status page answers.
 */
export const handleStatusEvents = async (
  request: Request,
  params: { tenantId: string; linkId: string | null; operator: { email: string } | null },
  deps: EventsDeps & { prisma: ControlDb },
): Promise<Response> => {
  const parsed = parseRequest(request);
  if (parsed instanceof Response) return parsed;
  const { tenantId, linkId } = params;
  const link = linkId ? await statusLinkById(deps.prisma, linkId) : null;
  if (link && link.tenantId === tenantId) {
    return serveEventStream(
      request,
      {
        id: `link:${link.id}`,
        tenantId,
        jobTypes: link.jobTypes.length ? link.jobTypes : null,
        recheck: async () => (await statusLinkById(deps.prisma, link.id))?.tenantId === tenantId,
      },
      parsed,
      deps,
    );
  }
  if (params.operator) {
    return serveEventStream(request, { id: `user:${params.operator.email}`, tenantId, jobTypes: null, recheck: async () => true }, parsed, deps);
  }
  return json(404, "NOT_FOUND", "not found");
};
