import { createHash, createHmac, pbkdf2Sync, randomBytes } from "node:crypto";

/** Iterations of PostgreSQL's own verifiers (scram_iterations' default). */
const ITERATIONS = 4096;

/**
 * A SCRAM-SHA-256 verifier of `password` in PostgreSQL's format
 * (`SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`, RFC 5803), computed here so that
 * `ALTER ROLE … PASSWORD` never carries the password itself: the server's log (an error's
 * STATEMENT line, `log_statement`) sees only the verifier. The password is normalised as
 * PostgreSQL and node-postgres normalise it when they authenticate ({@link saslprep}).
 */
export function scramVerifier(password: string, salt: Buffer = randomBytes(16)): string {
  const salted = pbkdf2Sync(Buffer.from(saslprep(password), "utf8"), salt, ITERATIONS, 32, "sha256");
  const clientKey = createHmac("sha256", salted).update("Client Key").digest();
  const storedKey = createHash("sha256").update(clientKey).digest();
  const serverKey = createHmac("sha256", salted).update("Server Key").digest();
  return `SCRAM-SHA-256$${ITERATIONS}:${salt.toString("base64")}$${storedKey.toString("base64")}:${serverKey.toString("base64")}`;
}

/**
 * The byte-changing steps of SASLprep (RFC 4013): non-ASCII spaces to U+0020, "commonly mapped
 * to nothing" characters removed, NFKC — the same steps node-postgres applies client side.
 */
export function saslprep(password: string): string {
  return (
    password
      .replace(/[\u00A0\u1680\u2000-\u200B\u202F\u205F\u3000]/g, " ")
      // The joiner (U+200D) and the combining marks (U+034F, U+180B–U+180D, U+FE00–U+FE0F) stand
      // alone: in one class with other characters they read as one joined character.
      .replace(/[\u00AD\u1806\u200C\u2060\uFEFF]|\u200D|\u034F|[\u180B-\u180D]|[\uFE00-\uFE0F]/g, "")
      .normalize("NFKC")
  );
}
