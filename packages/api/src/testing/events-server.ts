import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { ControlDb } from "@porter/db/prisma";
import { type EventsDeps, handleProducerEvents, handleStatusEvents } from "../events/sse";
import type { TestServer } from "./http-server";

/**
 * Serves the status stream's handlers from a node:http server, streaming the Response body as it
 * is produced (as Next does): `/api/events` and `/status/<tenant_id>/events`. The status route's
 * cookie is the bare link id here (`x-test-link`; the console verifies the signed cookie first),
 * and `x-test-operator: <email>` stands for an operator session.
 */
export const startEventsServer = async (deps: EventsDeps & { prisma: ControlDb }): Promise<TestServer & { sockets: Set<import("node:net").Socket> }> => {
  const sockets = new Set<import("node:net").Socket>();
  const server = createServer((req, res) => {
    void serve(req, res, deps);
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    sockets,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
};

const serve = async (req: IncomingMessage, res: ServerResponse, deps: EventsDeps & { prisma: ControlDb }): Promise<void> => {
  const abort = new AbortController();
  res.on("close", () => abort.abort());
  try {
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers.set(name, value);
    const url = `http://${req.headers.host ?? "127.0.0.1"}${req.url ?? "/"}`;
    const request = new Request(url, { method: req.method, headers, signal: abort.signal });
    const path = new URL(url).pathname;
    const status = /^\/status\/([^/]+)\/events$/.exec(path);
    const response = status
      ? await handleStatusEvents(
          request,
          {
            tenantId: decodeURIComponent(status[1]!),
            linkId: headers.get("x-test-link"),
            operator: headers.get("x-test-operator") ? { email: headers.get("x-test-operator")! } : null,
          },
          deps,
        )
      : await handleProducerEvents(request, deps);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    res.flushHeaders();
    if (!response.body) return void res.end();
    const reader = response.body.getReader();
    abort.signal.addEventListener("abort", () => void reader.cancel().catch(() => {}));
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      res.write(value);
    }
    res.end();
  } catch {
    if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
    res.end();
  }
};
