// How the producer client sends a call: node:http(s) on keep-alive connections by default, or the
// caller's fetch. Both give the client the same reply (status, headers, body as text), so what a
// call returns or throws does not depend on the transport.
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";

/** A reply as the producer client reads it (a Response's fields it uses, the body already read). */
export type Reply = {
  status: number;
  statusText: string;
  ok: boolean;
  headers: { get: (name: string) => string | null };
  text: string;
};

/** Sends one request to `url` (absolute) and reads the whole reply. Rejects when no reply arrived. */
export type Send = (method: "GET" | "POST", url: string, headers: Record<string, string>, body: string | undefined) => Promise<Reply>;

/**
 * The process's connections, one pool per scheme shared by every client, as fetch shares its
 * dispatcher: kept alive between calls (no handshake per call), any number per origin (as fetch),
 * closed once idle past the server's Keep-Alive hint (node's agent reads it) or 5 s.
 */
const AGENTS = { "http:": new HttpAgent({ keepAlive: true, timeout: 5000 }), "https:": new HttpsAgent({ keepAlive: true, timeout: 5000 }) };

// A method, not a named arrow: under tsx each named closure is wrapped at creation in esbuild's
// keepNames helper (a defineProperty of its name, ≈ 1 µs).
const headersOf = (res: IncomingMessage): Reply["headers"] => ({
  get(name) {
    const value = res.headers[name.toLowerCase()];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(", ") : value;
  },
});

/**
 * node:http(s) on the shared keep-alive agents — per call an http.ClientRequest and its socket
 * write, without fetch's Request/Response objects, web streams and abort signals (which cost more
 * CPU than the whole server's handling of an enqueue: docs/performance.md, "the HTTP producer API").
 */
export const nodeSend: Send = (method, url, headers, body) =>
  new Promise<Reply>((resolve, reject) => {
    const target = new URL(url);
    const agent = AGENTS[target.protocol as keyof typeof AGENTS];
    if (!agent) {
      reject(new TypeError(`unsupported protocol ${target.protocol} in ${url}`));
      return;
    }
    const request = target.protocol === "https:" ? httpsRequest : httpRequest;
    const outgoing = body === undefined ? headers : { ...headers, "content-length": String(Buffer.byteLength(body)) };
    const req = request(
      {
        agent,
        method,
        // The URL's host as a name or address (an IPv6 one without its brackets).
        hostname: target.hostname.startsWith("[") ? target.hostname.slice(1, -1) : target.hostname,
        port: target.port,
        path: target.pathname + target.search,
        headers: outgoing,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("error", reject);
        res.on("end", () => {
          // As fetch's text(): UTF-8, a leading byte order mark dropped.
          let text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString("utf8");
          if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
          const status = res.statusCode ?? 0;
          resolve({ status, statusText: res.statusMessage ?? "", ok: status >= 200 && status < 300, headers: headersOf(res), text });
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });

/** The caller's fetch (tests, proxies, instrumentation), read into a {@link Reply}. */
export const fetchSend =
  (base: typeof fetch): Send =>
  async (method, url, headers, body) => {
    const res = await base(url, { method, headers, body });
    return { status: res.status, statusText: res.statusText, ok: res.ok, headers: res.headers, text: await res.text() };
  };
