// @porter/db: connections, the Prisma client, the migrator and the embedded PostgreSQL server.
// Test helpers live under `@porter/db/testing/*` and are not exported here.

export {
  EMBEDDED_DEFAULT_PORT,
  type EmbeddedPostgres,
  type EmbeddedPostgresOptions,
  startEmbeddedPostgres,
} from "./embedded";
// The generated client: PrismaClient, the Prisma namespace, model types (Job, Queue, …) and enums
// (JobState, AttemptOutcome, Role) as both values and types.
export * from "./generated/prisma/client";
export { grantCoverage, missingGrantsMessage, RUNTIME_GRANTS, RUNTIME_MAINTAIN_TABLES, type TablePrivilege } from "./grants";
export {
  defaultMigrationsDir,
  describeProgress,
  MIGRATION_LOCK_KEY,
  MIGRATIONS_TABLE,
  type MigrateOptions,
  type MigrateResult,
  MigrationError,
  type MigrationFile,
  type MigrationProgress,
  migrate,
  migrationChecksum,
  readMigrations,
} from "./migrator";
export { type CreatePoolOptions, createPool, inTransaction, type Queryable, withTransaction } from "./pool";
export { type CreatePrismaOptions, createPrisma } from "./prisma";
export {
  defaultRoutinesDir,
  ROUTINES_TABLE,
  type RoutineDrift,
  type RoutineFile,
  type RoutineProgress,
  type RoutinesResult,
  readRoutines,
  routineDrift,
} from "./routines";
export {
  applyRuntimeRole,
  type ConnectionRole,
  DEFAULT_RUNTIME_ROLE,
  inspectConnectionRole,
  passwordOf,
  privilegeWarning,
  RuntimeRoleError,
  type RuntimeRoleResult,
  type RuntimeRoleSpec,
  type RuntimeUrlOptions,
  runtimeDatabaseUrl,
  runtimeLoginHint,
  runtimeRoleName,
} from "./runtime-role";
