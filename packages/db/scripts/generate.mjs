// Runs `prisma generate` offline. Prisma 7's CLI wants to download a schema-engine binary even
// for `generate`, which needs none; pointing PRISMA_SCHEMA_ENGINE_BINARY at a stub satisfies it.
// Migrations never go through the schema engine here: see packages/db/src/migrator.ts.
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const pkgDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const stubDir = join(pkgDir, "node_modules", ".porter-stub");
const stub = join(stubDir, "schema-engine");
mkdirSync(stubDir, { recursive: true });
writeFileSync(stub, "#!/bin/sh\necho 'porter: the Prisma schema engine is not used; migrations are applied by npm run db:migrate' >&2\nexit 1\n");
chmodSync(stub, 0o755);

const result = spawnSync("npx", ["prisma", "generate", "--config", "prisma.config.ts"], {
  cwd: pkgDir,
  stdio: "inherit",
  env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: stub, PRISMA_HIDE_UPDATE_MESSAGE: "1" },
});
process.exit(result.status ?? 1);
