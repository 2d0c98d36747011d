import { describeProgress, migrate } from "@porter/db/migrator";
import { defineCommand } from "../command";

/** `migrate`: applies the SQL migrations of prisma/migrations, then the routines, one line of progress per file. */
export const migrateCommand = defineCommand({
  name: "migrate",
  summary: "apply pending database migrations",
  usage: "migrate [--json]",
  description:
    "Applies the pending SQL migrations of prisma/migrations in order, each in its own transaction,\n"
    + "under an advisory lock (concurrent migrators wait). Refuses to run when an applied file changed.\n"
    + "Then (re)creates the routines of packages/core/src/sql/routines whose checksum changed.\n"
    + "Runs as DATABASE_URL's user (the owner of the tables), then creates the runtime role if missing\n"
    + "(porter_app, or the user of PORTER_APP_DATABASE_URL), sets PORTER_APP_PASSWORD on it when given,\n"
    + "and grants it exactly the privileges of packages/db/src/grants.ts.",
  run: async (ctx) => {
    const { pool, runtimeRole } = await ctx.ownerDb();
    const result = await migrate(pool, {
      runtimeRole,
      onProgress: (p) => ctx.out.progress(describeProgress(p)),
    });
    const role = result.runtimeRole;
    ctx.out.result(
      {
        applied: result.applied,
        skipped: result.skipped,
        routines_applied: result.routines?.applied ?? [],
        ...(role ? { runtime_role: role.name, runtime_role_created: role.isCreated } : {}),
      },
      [
        `migrations: ${result.applied.length} applied, ${result.skipped} already applied`,
        `routines: ${result.routines?.applied.length ?? 0} applied, ${result.routines?.skipped ?? 0} unchanged`,
        ...(role ? [`runtime role: ${role.name} (${role.isCreated ? "created" : "exists"}; grants applied${role.isPasswordSet ? "; password set" : ""})`] : []),
      ],
    );
  },
});
