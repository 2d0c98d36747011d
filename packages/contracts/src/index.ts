export * from "./job";
export * from "./errors";
export * from "./diag";
export * from "./storable";
