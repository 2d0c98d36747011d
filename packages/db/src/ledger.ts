// What the migrator's two ledgers share: schema migrations (migrator.ts, `_porter_migrations`)
// and routines (routines.ts, `_porter_routines`) are both SQL files recorded by checksum.
import { createHash } from "node:crypto";

/** sha256 (hex) of a SQL file, insensitive to CRLF line endings (a Windows checkout changes nothing). */
export function sqlChecksum(sql: string): string {
  return createHash("sha256").update(sql.replace(/\r\n/g, "\n")).digest("hex");
}

/** A migration or routine could not be applied, or a ledger disagrees with the files on disk. */
export class MigrationError extends Error {
  /** The migration (directory name) or routine (`routines/<file>.sql`) the error is about, when there is one. */
  readonly migration: string | undefined;

  constructor(message: string, opts: { migration?: string; cause?: unknown } = {}) {
    super(message, { cause: opts.cause });
    this.name = "MigrationError";
    this.migration = opts.migration;
  }
}

/** The reason of an error, for a message that wraps it. */
export function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
