import { STREAM_EVENT_NAMES, type StreamEvent, type StreamEventData, type StreamEventName, TERMINAL_STATES } from "@porter/contracts";

// Watching a job over the live status stream (`GET /api/events?job_id=`, docs/tenant-status.md
// "Live status stream"): fetch and a small SSE parser (no dependency), reconnecting with
// Last-Event-ID and backoff, so a dropped connection loses no event.

/** Options of {@link watchJob}. */
export type WatchOptions = {
  /** Stops watching (the iterator ends; a pending `next()` resolves done). */
  signal?: AbortSignal;
  /** Resume after this event id (an earlier `watch`'s last `event.id`). */
  lastEventId?: string;
};

/** What {@link watchJob} needs: the console's origin, the producer key, a fetch. */
export type WatchTarget = { url: string; apiKey: string; fetch?: typeof fetch };

/** `waitFor` gave up: no terminal event within `timeoutMs`. */
export class WaitForTimeoutError extends Error {
  override readonly name = "WaitForTimeoutError";
  readonly code = "TIMEOUT";
  constructor(
    readonly jobId: string,
    readonly timeoutMs: number,
  ) {
    super(`job ${jobId} did not finish within ${timeoutMs} ms`);
  }
}

/** The stream refused the watch (401, 403, 404, 400): retrying would not help. */
export class WatchError extends Error {
  override readonly name = "WatchError";
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
  ) {
    super(message);
  }
}

const TERMINAL: ReadonlySet<string> = new Set(TERMINAL_STATES.map((s) => `job.${s.toLowerCase()}`));
const NAMES: ReadonlySet<string> = new Set(STREAM_EVENT_NAMES);
const MAX_BACKOFF_MS = 30_000;

type RawMessage = { id?: string; event: string; data: string; retry?: number };

/** SSE parsing per the WHATWG EventSource rules that matter here (fields, comments, CR/LF). */
async function* parseSse(body: ReadableStream<Uint8Array>): AsyncGenerator<RawMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let msg: RawMessage = { event: "message", data: "" };
  let hasData = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      for (;;) {
        const nl = buffer.search(/\r\n|\r|\n/);
        if (nl < 0) break;
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + (buffer.startsWith("\r\n", nl) ? 2 : 1));
        if (line === "") {
          if (hasData) yield { ...msg, data: msg.data.endsWith("\n") ? msg.data.slice(0, -1) : msg.data };
          else if (msg.retry !== undefined) yield { event: "", data: "", retry: msg.retry };
          msg = { event: "message", data: "" };
          hasData = false;
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let val = colon < 0 ? "" : line.slice(colon + 1);
        if (val.startsWith(" ")) val = val.slice(1);
        if (field === "data") {
          msg.data += `${val}\n`;
          hasData = true;
        } else if (field === "event") msg.event = val;
        else if (field === "id" && !val.includes("\0")) msg.id = val;
        else if (field === "retry" && /^\d+$/.test(val)) msg.retry = Number(val);
      }
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => {});
  }
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });

/**
 * The job's events as they happen: its current state first (or, with `lastEventId`, every event
 * after that one), then each change, ending after the terminal event (succeeded, dead, cancelled,
 * expired) or when `signal` aborts. A dropped connection or a 429/5xx is retried with backoff and
 * `Last-Event-ID`, so nothing is lost; a refusal (unknown job, bad key) throws {@link WatchError}.
 */
export async function* watchJob(target: WatchTarget, jobId: string, options: WatchOptions = {}): AsyncGenerator<StreamEvent> {
  const base = target.url.replace(/\/+$/, "").replace(/\/api\/trpc$/, "");
  const doFetch = target.fetch ?? globalThis.fetch;
  let lastEventId = options.lastEventId;
  let retryMs = 2000;
  let failures = 0;
  const { signal } = options;
  while (!signal?.aborted) {
    const abort = new AbortController();
    const onAbort = () => abort.abort();
    signal?.addEventListener("abort", onAbort, { once: true });
    let wait: number | null = null;
    try {
      const headers: Record<string, string> = { authorization: `Bearer ${target.apiKey}`, accept: "text/event-stream" };
      if (lastEventId) headers["last-event-id"] = lastEventId;
      const res = await doFetch(`${base}/api/events?job_id=${encodeURIComponent(jobId)}`, { headers, signal: abort.signal });
      if (res.status === 429 || res.status >= 500) {
        const after = Number(res.headers.get("retry-after"));
        wait = Number.isFinite(after) && after > 0 ? after * 1000 : null;
        await res.body?.cancel().catch(() => {});
        throw new Error(`HTTP ${res.status}`);
      }
      if (!res.ok || !res.body) {
        const body = (await res.json().catch(() => null)) as { error?: { code?: string; message?: string } } | null;
        throw new WatchError(body?.error?.message ?? `HTTP ${res.status}`, res.status, body?.error?.code ?? "HTTP_ERROR");
      }
      for await (const m of parseSse(res.body)) {
        if (m.retry !== undefined) retryMs = m.retry;
        if (m.id) lastEventId = m.id;
        if (!NAMES.has(m.event)) continue; // `reset` (a snapshot follows) and anything newer
        failures = 0;
        const data = JSON.parse(m.data) as StreamEventData;
        yield { id: m.id ?? data.id, event: m.event as StreamEventName, data };
        if (TERMINAL.has(m.event)) return;
      }
    } catch (error) {
      if (error instanceof WatchError) throw error;
      if (signal?.aborted) return;
    } finally {
      signal?.removeEventListener("abort", onAbort);
      abort.abort();
    }
    failures++;
    await sleep(wait ?? Math.min(MAX_BACKOFF_MS, retryMs * 2 ** Math.max(0, failures - 1)) * (0.5 + Math.random() / 2), signal);
  }
}

/**
 * Resolves with the job's terminal event's data (status SUCCEEDED, DEAD, CANCELLED or EXPIRED);
 * rejects with {@link WaitForTimeoutError} after `timeoutMs`.
 */
export const waitForJob = async (target: WatchTarget, jobId: string, options: { timeoutMs: number; signal?: AbortSignal }): Promise<StreamEventData> => {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), options.timeoutMs);
  const onAbort = () => abort.abort();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    for await (const event of watchJob(target, jobId, { signal: abort.signal })) {
      if (TERMINAL.has(event.event)) return event.data;
    }
    throw options.signal?.aborted ? new Error("waitFor aborted") : new WaitForTimeoutError(jobId, options.timeoutMs);
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", onAbort);
  }
};
