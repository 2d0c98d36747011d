// @porter/worker: the data-plane runtime (claim loop, handlers, leases, maintenance), for the
// `porter-worker` bin, the `npm start` launcher (apps/porter), services that run a worker inside
// themselves (`startWorker`) and tests.

export { parseEnv, type WorkerEnv } from "./env";
export {
  builtInDemoHandlers,
  createHandlerMap,
  createWebhookDeliver,
  defaultHandlerMap,
  diagHandlers,
  type HandlerMap,
  simulatedHandlers,
  type WebhookDeliverDeps,
} from "./handlers";
export {
  checkOwnHandlers,
  HandlerSetupError,
  handlersOfModule,
  isHandler,
  loadHandlerModule,
  replacedDemoTypes,
  withOwnHandlers,
} from "./handlers/own-handlers";
export { createLogger, type Logger } from "./logger";
export { defaultPoolSize, MIN_POOL_SIZE, type StartedWorker, type StartWorkerOptions, startWorker } from "./runtime/start-worker";
export { type DrainReport, PorterWorker, type WorkerOptions } from "./runtime/worker";
