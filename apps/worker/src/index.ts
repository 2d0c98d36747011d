// @porter/worker: the data-plane runtime (claim loop, handlers, leases, maintenance), for the
// `porter-worker` bin, the `npm start` launcher (apps/porter) and tests.

export { parseEnv, type WorkerEnv } from "./env";
export { createHandlerMap, defaultHandlerMap, diagHandlers, type HandlerMap, simulatedHandlers } from "./handlers";
export { createLogger, type Logger } from "./logger";
export { type DrainReport, PorterWorker, type WorkerOptions } from "./runtime/worker";
