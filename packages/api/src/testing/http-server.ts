import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { createPrisma } from "@porter/db/prisma";
import { handleTrpcRequest, type TrpcHttpDeps } from "../http";

/**
 * A tRPC reply's JSON body as the tests read it: `result.data` on success, `error` (with the error
 * formatter's `data`) on a refusal. Fields a procedure does not return are simply absent.
 */
export type TrpcReplyBody = {
  result: { data: Record<string, unknown> & { job_id: string; status: string; results: unknown[]; timeline: Array<{ kind: string }> } };
  error: {
    message: string;
    data: { code: string; httpStatus: number; appCode: string; stack?: string; details: Record<string, unknown> & { issues: Array<{ path: unknown }> } };
  };
};

/** A running test server: `url` is its origin (`http://127.0.0.1:<port>`). */
export type TestServer = { url: string; close: () => Promise<void> };

/**
 * Serves `handleTrpcRequest` — the code behind the console's `/api/trpc/*` route — from a Node
 * `http` server on an ephemeral port, so tests call the API over real HTTP as producers do.
 */
export const startTestServer = async (given: Omit<TrpcHttpDeps, "prisma"> & Partial<Pick<TrpcHttpDeps, "prisma">>): Promise<TestServer> => {
  // Without a Prisma client of the caller's, one over the same pool, disconnected on close.
  const ownPrisma = given.prisma ? undefined : createPrisma(given.db);
  const deps: TrpcHttpDeps = { ...given, prisma: given.prisma ?? ownPrisma! };
  const server = createServer((req, res) => {
    void serve(req, res, deps);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }).then(() => ownPrisma?.$disconnect()),
  };
};

const serve = async (req: IncomingMessage, res: ServerResponse, deps: TrpcHttpDeps): Promise<void> => {
  try {
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
      body: hasBody ? (Readable.toWeb(req) as unknown as ReadableStream<Uint8Array>) : undefined,
      duplex: "half",
    } as RequestInit);
    const response = await handleTrpcRequest(request, deps);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    res.end(Buffer.from(await response.arrayBuffer()));
  } catch {
    if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: "test server adapter failed" } }));
  }
};
