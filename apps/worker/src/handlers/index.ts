import { diagHandlers } from "./diag";
import { createHandlerRegistry, type HandlerRegistry } from "./registry";
import { simulatedHandlers } from "./simulated";

export { diagHandlers } from "./diag";
export { simulatedHandlers } from "./simulated";
export { createHandlerRegistry, type HandlerRegistry } from "./registry";

/** Every handler this worker ships: the diag set and the simulated demo job types. */
export const defaultHandlerRegistry = (): HandlerRegistry => createHandlerRegistry([...diagHandlers, ...simulatedHandlers]);
