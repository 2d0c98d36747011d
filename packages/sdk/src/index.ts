export * from "./enqueue-in-transaction";
export * from "./handler";
export * from "./producer";
export * from "./progress";
export * from "./verify-webhook";
