import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { KeyAuthCache } from "@porter/core";
import { createPrisma } from "@porter/db/prisma";
import type { TrpcHttpDeps } from "../http";
import { createNodeTrpcHandler } from "../node-http";

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
 * Serves the producer API's node:http handler (`createNodeTrpcHandler`, what `porter-start` serves
 * on PORT: the producer procedures on their direct path, everything else through
 * `handleTrpcRequest`) on an ephemeral port, so tests call the API over real HTTP as producers do.
 * Each server is one "process": its own key cache (core's KeyAuthCache over its pool, unless the
 * caller passes one).
 */
export const startTestServer = async (given: Omit<TrpcHttpDeps, "prisma"> & Partial<Pick<TrpcHttpDeps, "prisma">>): Promise<TestServer> => {
  // Without a Prisma client of the caller's, one over the same pool, disconnected on close.
  const ownPrisma = given.prisma ? undefined : createPrisma(given.db);
  const deps: TrpcHttpDeps = { ...given, prisma: given.prisma ?? ownPrisma!, keyAuthCache: given.keyAuthCache ?? new KeyAuthCache(given.db) };
  const handler = createNodeTrpcHandler(deps);
  const server = createServer((req, res) => {
    void handler(req, res);
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
