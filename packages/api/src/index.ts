// @porter/api: the tRPC routers (producer API, system) and the HTTP adapter the console serves.
export { appRouter, createCaller, type AppRouter } from "./root";
export { createContext, ROLES, type Context, type CreateContextOptions, type Role, type Session } from "./context";
export {
  adminProcedure,
  createTRPCRouter,
  operatorProcedure,
  producerProcedure,
  publicProcedure,
  viewerProcedure,
  type ErrorData,
} from "./trpc";
export { DEFAULT_MAX_BODY_BYTES, handleTrpcRequest, type TrpcHttpDeps } from "./http";
export { checkHealth, type HealthReport } from "./health";
export { scopeEnqueueRequest } from "./routers/producer";
