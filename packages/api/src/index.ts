// @porter/api: the tRPC routers (producer API, console procedures, system), console sessions and
// the HTTP adapter the console serves. Form schemas: `@porter/api/schemas/control-plane`, `…/schemas/jobs`.
export { appRouter, createCaller, type AppRouter } from "./root";
export { clientAddressOf, createContext, ROLES, type Context, type CreateContextOptions, type Role, type Session } from "./context";
export {
  adminProcedure,
  createTRPCRouter,
  operatorProcedure,
  producerProcedure,
  publicProcedure,
  viewerProcedure,
  type ErrorData,
  type Policy,
  type ProcedureMeta,
} from "./trpc";
export { refuseCrossSite } from "./csrf";
export {
  createSessionReader,
  createSessionUserCache,
  DEFAULT_SESSION_CACHE_MS,
  readSession,
  SESSION_VERSION_CLAIM,
  sessionCookieName,
  sessionTokenFromCookies,
  type SessionReaderOptions,
  type SessionUserCache,
} from "./session";
export { DEFAULT_MAX_BODY_BYTES, handleTrpcRequest, type TrpcHttpDeps } from "./http";
export { checkHealth, type HealthReport } from "./health";
export { scopeEnqueueRequest } from "./routers/producer";
