import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { handleTrpcRequest, type TrpcHttpDeps } from "@porter/api/http";
import { createApiKey, type Registry } from "@porter/core";
import { createProducerClient } from "@porter/sdk";
import type pg from "pg";
import { porterInput, PORTER_TENANT } from "./porter";
import type { HttpProducer } from "./types";

/**
 * Porter's producer API over real HTTP, in this process: `handleTrpcRequest` (the code behind the
 * console's /api/trpc route) served by node:http on an ephemeral port, called with the SDK's
 * producer client and an API key from core's `createApiKey` — what a producer service does.
 */
export const startPorterHttp = async (pool: pg.Pool, registry: Registry): Promise<HttpProducer> => {
  const deps: TrpcHttpDeps = { pool, registry };
  const server = createServer((req, res) => void serve(req, res, deps));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const { key } = await createApiKey(pool, { tenantIds: [PORTER_TENANT], jobTypes: ["*"], name: "bench", actor: "bench" });
  const client = createProducerClient({ url: `http://127.0.0.1:${port}`, apiKey: key });
  const request = ({ tenant_id: _tenant, ...rest }: ReturnType<typeof porterInput>) => rest;
  return {
    enqueueOne: async (job) => (await client.enqueue(request(porterInput(job)))).job_id,
    enqueueBatch: async (jobs) => (await client.enqueueBatch(jobs.map((j) => request(porterInput(j))))).map((r) => r.job_id),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
};

const serve = async (req: IncomingMessage, res: ServerResponse, deps: TrpcHttpDeps): Promise<void> => {
  try {
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (Array.isArray(value)) value.forEach((v) => headers.append(name, v));
      else if (value !== undefined) headers.set(name, value);
    }
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
    res.end(JSON.stringify({ error: { message: "bench server adapter failed" } }));
  }
};
