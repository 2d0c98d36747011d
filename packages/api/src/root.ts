import { producerRouter } from "./routers/producer";
import { systemRouter } from "./routers/system";
import { createCallerFactory, createTRPCRouter } from "./trpc";

/** Every tRPC procedure Porter serves at `/api/trpc/<router>.<procedure>`. */
export const appRouter = createTRPCRouter({
  producer: producerRouter,
  system: systemRouter,
});

/** The router's type, for clients (`createTRPCClient<AppRouter>`); import it with `import type`. */
export type AppRouter = typeof appRouter;

/** Calls procedures in process (server components, tests) with a context you build. */
export const createCaller = createCallerFactory(appRouter);
