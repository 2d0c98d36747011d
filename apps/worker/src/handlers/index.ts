import { diagHandlers } from "./diag";
import { createHandlerMap, type HandlerMap } from "./handler-map";
import { simulatedHandlers } from "./simulated";

export { diagHandlers } from "./diag";
export { simulatedHandlers } from "./simulated";
export { createHandlerMap, type HandlerMap } from "./handler-map";

/** Every handler this worker ships: the diag set and the simulated demo job types. */
export const defaultHandlerMap = (): HandlerMap => createHandlerMap([...diagHandlers, ...simulatedHandlers]);
