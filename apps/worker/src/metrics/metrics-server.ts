import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "../logger";
import type { WorkerMetrics } from "./worker-metrics";

/** A listening metrics endpoint: where it listens, and how to close it. */
export type MetricsServer = { readonly host: string; readonly port: number; close: () => Promise<void> };

/**
 * Serves `GET /metrics` (Prometheus text) from the worker's own registry on `host:port`
 * (`--metrics-port`; loopback unless `--metrics-host` widens it). Port 0 picks a free one. Anything
 * else is 404. Scrapes read memory only: no database round trip.
 */
export const startMetricsServer = (metrics: WorkerMetrics, options: { host: string; port: number; logger: Logger }): Promise<MetricsServer> => {
  const server: Server = createServer((request, response) => {
    if (request.method !== "GET" || (request.url ?? "").split("?")[0] !== "/metrics") {
      response.writeHead(404, { "content-type": "text/plain; charset=utf-8" }).end("not found: GET /metrics\n");
      return;
    }
    metrics
      .render()
      .then(({ body, contentType }) => response.writeHead(200, { "content-type": contentType, "cache-control": "no-store" }).end(body))
      .catch((error: unknown) => {
        options.logger.warn("metrics scrape failed", { err: error });
        response.writeHead(500, { "content-type": "text/plain; charset=utf-8" }).end("metrics failed\n");
      });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      const address = server.address() as AddressInfo;
      resolve({
        host: options.host,
        port: address.port,
        close: () => new Promise<void>((done) => server.close(() => done())),
      });
    });
  });
};
