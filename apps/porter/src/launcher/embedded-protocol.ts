/** Prefix of the line the embedded PostgreSQL holder prints once the server accepts connections. */
export const EMBEDDED_READY = "PORTER_EMBEDDED_READY ";

/** The JSON after {@link EMBEDDED_READY}. */
export type EmbeddedReady = { connectionString: string; port: number; dataDir: string; isOwner: boolean };
