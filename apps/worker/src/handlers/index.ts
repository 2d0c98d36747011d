import type { AnyHandler } from "@porter/sdk";
import { diagHandlers } from "./diag";
import { createHandlerMap, type HandlerMap } from "./handler-map";
import { simulatedHandlers } from "./simulated";
import { createWebhookDeliver, type WebhookDeliverDeps } from "./webhook-deliver";

export { diagHandlers } from "./diag";
export { createHandlerMap, type HandlerMap } from "./handler-map";
export { simulatedHandlers } from "./simulated";
export { createWebhookDeliver, type WebhookDeliverDeps } from "./webhook-deliver";

/**
 * The demo job types' handlers this worker runs: the simulated ones, with `webhook.deliver` the
 * real one when the worker's database is given (it reads the endpoint when it delivers; payloads
 * without a `webhook_endpoint:` ref stay simulated). Without `deps`, all simulated.
 */
export const builtInDemoHandlers = (deps?: WebhookDeliverDeps): AnyHandler[] =>
  deps ? simulatedHandlers.map((h) => (h.type === "webhook.deliver" ? createWebhookDeliver(deps) : h)) : simulatedHandlers;

/** Every handler this worker ships: the diag set and the demo job types ({@link builtInDemoHandlers}). */
export const defaultHandlerMap = (deps?: WebhookDeliverDeps): HandlerMap => createHandlerMap([...diagHandlers, ...builtInDemoHandlers(deps)]);
