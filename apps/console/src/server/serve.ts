// The console's server (what `npm start` runs, in place of `next start`): one node:http server on
// PORT/HOST. The producer API's calls — POST /api/trpc/producer.enqueue, .enqueueBatch, .cancel,
// GET .producer.get, and batch calls of producer procedures only (the SDK joins concurrent
// enqueues into one) — are answered here by @porter/api's node handler (createNodeTrpcHandler:
// tRPC's procedure call and error shape, the process's key cache) without entering Next;
// everything else — pages, console procedures, batches with a console procedure, /api/events,
// /api/health, /api/metrics — is Next's request handler (Next's custom server), exactly as under
// `next start`.
// Run from apps/console with tsx: `node --import tsx src/server/serve.ts`.
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";
import { securityHeaders } from "../lib/security-headers";
import { getPool } from "./db";
import { getEnv } from "./env";
import { getLogger } from "./logger";
import { isProducerCall } from "./producer-call";

// As `next start`: a production build, served as such.
(process.env as Record<string, string>).NODE_ENV ??= "production";

let env: ReturnType<typeof getEnv>;
try {
  env = getEnv();
} catch (error) {
  process.stderr.write(`porter console: ${(error as Error).message}\n`);
  process.exit(1);
}

// Next first: it sets up the AsyncLocalStorage its modules expect (as `next start` does) before
// anything that imports next-auth or Next's internals is loaded.
await import("next/dist/server/node-environment.js");
const { default: next } = await import("next");
const { createNodeTrpcHandler } = await import("@porter/api/node-http");
const { trpcDeps } = await import("./trpc-deps");
const dir = fileURLToPath(new URL("../..", import.meta.url));
const app = next({ dev: false, dir, hostname: env.HOST, port: env.PORT });
await app.prepare();
const nextHandler = app.getRequestHandler();
const producerHandler = createNodeTrpcHandler(trpcDeps());
const isHttps = env.NEXTAUTH_URL?.startsWith("https://") ?? false;

const server = createServer((req, res) => {
  if (isProducerCall(req.url ?? "")) {
    // The headers proxy.ts gives every response Next serves, so an API reply looks the same.
    for (const [name, value] of Object.entries(securityHeaders({ nonce: randomBytes(16).toString("base64"), isHttps }))) res.setHeader(name, value);
    void producerHandler(req, res);
    return;
  }
  void nextHandler(req, res);
});
server.listen(env.PORT, env.HOST, () => {
  process.stdout.write(`porter console ready on http://${env.HOST}:${env.PORT} (producer API served by its own handler; the rest by Next)\n`);
});

let isStopping = false;
const stop = (signal: string) => {
  if (isStopping) return;
  isStopping = true;
  getLogger().info("console stopping", { signal });
  server.close(() => {
    void getPool()
      .end()
      .finally(() => process.exit(0));
  });
  server.closeIdleConnections();
  // Live status streams and slow clients: cut after a short grace.
  setTimeout(() => server.closeAllConnections(), 2000).unref();
  setTimeout(() => process.exit(0), 5000).unref();
};
process.on("SIGTERM", () => stop("SIGTERM"));
process.on("SIGINT", () => stop("SIGINT"));
