// @porter/worker: the data-plane runtime, for launchers (bin/start.ts) and tests.
export { PorterWorker, type DrainReport, type WorkerOptions } from "./runtime/worker";
export { createHandlerRegistry, defaultHandlerRegistry, diagHandlers, simulatedHandlers, type HandlerRegistry } from "./handlers";
export { createLogger, type Logger } from "./logger";
export { parseEnv, type WorkerEnv } from "./env";
