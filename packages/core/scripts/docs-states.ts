// Regenerates the transitions section of docs/state-machine.md from packages/core/src/sql/transitions.ts.
// `npm run docs:states` writes it; with `--check` it only fails (exit 1) when the doc is stale.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { withTransitionsSection } from "../src/sql/transitions-doc";

const path = fileURLToPath(new URL("../../../docs/state-machine.md", import.meta.url));
const doc = readFileSync(path, "utf8");
const next = withTransitionsSection(doc);
if (process.argv.includes("--check")) {
  if (next !== doc) {
    process.stderr.write("docs/state-machine.md is stale: run `npm run docs:states`\n");
    process.exit(1);
  }
} else if (next !== doc) {
  writeFileSync(path, next);
  process.stdout.write("docs/state-machine.md: transitions section regenerated\n");
}
