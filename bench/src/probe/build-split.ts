// Probe helper (not part of the suite): bundles split.ts as the bench bundles its worker (no tsx
// keepNames helper), to profile the worker's CPU and allocations as users run it.
//   npx tsx bench/src/probe/build-split.ts <outfile.mjs>   then   node <outfile.mjs> [jobs] [prefetch] [concurrency]
import { fileURLToPath } from "node:url";
import { bundle } from "@porter/porter/launcher/bundles";

const outfile = process.argv[2] ?? fileURLToPath(new URL("../../.scratch/bundles/probe/split.mjs", import.meta.url));
console.log(await bundle({ entry: fileURLToPath(new URL("./split.ts", import.meta.url)), outfile }));
