// @porter/api: the tRPC routers (producer API, console procedures, system), console sessions and
// the HTTP adapter the console serves. Form schemas: `@porter/api/schemas/control-plane`, `…/schemas/jobs`.

export { type Context, type CreateContextOptions, clientAddressOf, createContext, ROLES, type Role, type Session } from "./context";
export { refuseCrossSite } from "./csrf";
export {
  DEFAULT_SSE_MAX_PER_CREDENTIAL,
  type EventsDeps,
  handleProducerEvents,
  handleStatusEvents,
  SSE_KEEPALIVE_MS,
  SSE_RECHECK_MS,
  type StreamCredential,
  StreamLimiter,
  serveEventStream,
} from "./events/sse";
export { checkHealth, type HealthReport } from "./health";
export { DEFAULT_MAX_BODY_BYTES, handleTrpcRequest, type TrpcHttpDeps } from "./http";
export { cookieOf, createReads, READ_LSN_COOKIE, type Reads, type ReadTarget, type ReplicaReads, readLsnOf } from "./reads";
export { type AppRouter, appRouter, createCaller } from "./root";
export { scopeEnqueueRequest } from "./routers/producer";
export {
  createSessionReader,
  createSessionUserCache,
  DEFAULT_SESSION_CACHE_MS,
  readSession,
  SESSION_VERSION_CLAIM,
  type SessionReaderOptions,
  type SessionUserCache,
  sessionCookieName,
  sessionTokenFromCookies,
} from "./session";
export {
  adminProcedure,
  createTRPCRouter,
  type ErrorData,
  operatorProcedure,
  type Policy,
  type ProcedureMeta,
  producerProcedure,
  publicProcedure,
  viewerProcedure,
  viewerReadProcedure,
} from "./trpc";
