import { apiKeysRouter, meRouter, usersRouter } from "./routers/access";
import { dlqRouter } from "./routers/dlq";
import { jobsRouter } from "./routers/jobs";
import { auditRouter, overviewRouter } from "./routers/overview";
import { poolsRouter } from "./routers/pools";
import { producerRouter } from "./routers/producer";
import { queuesRouter } from "./routers/queues";
import { jobTypesRouter, resourceKeysRouter, tenantsRouter } from "./routers/registry";
import { systemRouter } from "./routers/system";
import { webhooksRouter } from "./routers/webhooks";
import { createCallerFactory, createTRPCRouter } from "./trpc";

/**
 * Every tRPC procedure Porter serves at `/api/trpc/<router>.<procedure>`. Each declares who may
 * call it through the builder it starts from (public, producer key, viewer, operator, admin);
 * `policy-matrix.int.test.ts` walks this router and fails on any procedure without a policy.
 */
export const appRouter = createTRPCRouter({
  producer: producerRouter,
  system: systemRouter,
  me: meRouter,
  overview: overviewRouter,
  jobs: jobsRouter,
  pools: poolsRouter,
  queues: queuesRouter,
  jobTypes: jobTypesRouter,
  tenants: tenantsRouter,
  resourceKeys: resourceKeysRouter,
  apiKeys: apiKeysRouter,
  users: usersRouter,
  audit: auditRouter,
  dlq: dlqRouter,
  webhooks: webhooksRouter,
});

/** The router's type, for clients (`createTRPCClient<AppRouter>`); import it with `import type`. */
export type AppRouter = typeof appRouter;

/** Calls procedures in process (server components, tests) with a context you build. */
export const createCaller = createCallerFactory(appRouter);
