// @porter/worker: the data-plane runtime (claim loop, handlers, leases, maintenance), for the
// `porter-worker` bin, the `npm start` launcher (apps/porter) and tests.
export { PorterWorker, type DrainReport, type WorkerOptions } from "./runtime/worker";
export { createHandlerMap, defaultHandlerMap, diagHandlers, simulatedHandlers, type HandlerMap } from "./handlers";
export { createLogger, type Logger } from "./logger";
export { parseEnv, type WorkerEnv } from "./env";
