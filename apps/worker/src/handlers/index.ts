import { diagHandlers } from "./diag";
import { createHandlerMap, type HandlerMap } from "./handler-map";
import { simulatedHandlers } from "./simulated";

export { diagHandlers } from "./diag";
export { createHandlerMap, type HandlerMap } from "./handler-map";
export { simulatedHandlers } from "./simulated";

/** Every handler this worker ships: the diag set and the simulated demo job types. */
export const defaultHandlerMap = (): HandlerMap => createHandlerMap([...diagHandlers, ...simulatedHandlers]);
