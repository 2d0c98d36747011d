export * from "./handler";
export * from "./producer";
