export * from "./hub";
export * from "./log";
export * from "./notifier";
