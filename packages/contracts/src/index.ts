export * from "./diag";
export * from "./errors";
export * from "./job";
export * from "./storable";
export * from "./tenant-status";
export * from "./trace";
