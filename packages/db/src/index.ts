// @porter/db: connections, the Prisma client, the migrator and the embedded PostgreSQL server.
// Test helpers live under `@porter/db/testing/*` and are not exported here.
export { createPool, inTransaction, withTransaction, type CreatePoolOptions, type Queryable } from "./pool";
export { createPrisma, type CreatePrismaOptions } from "./prisma";
export {
  defaultMigrationsDir,
  describeProgress,
  migrate,
  migrationChecksum,
  MigrationError,
  MIGRATION_LOCK_KEY,
  MIGRATIONS_TABLE,
  readMigrations,
  type MigrateOptions,
  type MigrateResult,
  type MigrationFile,
  type MigrationProgress,
} from "./migrator";
export {
  defaultRoutinesDir,
  readRoutines,
  routineDrift,
  ROUTINES_TABLE,
  type RoutineDrift,
  type RoutineFile,
  type RoutineProgress,
  type RoutinesResult,
} from "./routines";
export {
  applyRuntimeRole,
  DEFAULT_RUNTIME_ROLE,
  inspectConnectionRole,
  passwordOf,
  privilegeWarning,
  runtimeDatabaseUrl,
  runtimeLoginHint,
  runtimeRoleName,
  RuntimeRoleError,
  type ConnectionRole,
  type RuntimeRoleResult,
  type RuntimeRoleSpec,
  type RuntimeUrlOptions,
} from "./runtime-role";
export { grantCoverage, missingGrantsMessage, RUNTIME_GRANTS, RUNTIME_MAINTAIN_TABLES, type TablePrivilege } from "./grants";
export {
  EMBEDDED_DEFAULT_PORT,
  startEmbeddedPostgres,
  type EmbeddedPostgres,
  type EmbeddedPostgresOptions,
} from "./embedded";
// The generated client: PrismaClient, the Prisma namespace, model types (Job, Queue, …) and enums
// (JobState, AttemptOutcome, Role) as both values and types.
export * from "./generated/prisma/client";
