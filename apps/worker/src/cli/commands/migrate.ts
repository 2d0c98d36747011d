import { migrate } from "@porter/db/migrator";
import { parseCommandArgs } from "../args";
import { helpText, type Command } from "../command";

/** `migrate`: applies the SQL migrations of prisma/migrations, one line of progress per file. */
export const migrateCommand: Command = {
  name: "migrate",
  summary: "apply pending database migrations",
  help: helpText(
    "migrate [--json]",
    "Applies the pending SQL migrations of prisma/migrations in order, each in its own transaction,\n" +
      "under an advisory lock (concurrent migrators wait). Refuses to run when an applied file changed.",
  ),
  run: async (ctx, argv) => {
    parseCommandArgs("migrate", argv, {});
    const { pool } = await ctx.db();
    const result = await migrate(pool, {
      onProgress: (p) => ctx.out.progress(p.status === "applied" ? `  applied ${p.name} (${p.durationMs} ms)` : `  up to date ${p.name}`),
    });
    ctx.out.result(
      { applied: result.applied, skipped: result.skipped },
      `migrations: ${result.applied.length} applied, ${result.skipped} already applied`,
    );
  },
};
