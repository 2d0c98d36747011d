#!/usr/bin/env node
// Porter's operations CLI (`porter <command>`).
// An executable of its own (package.json "bin"): one process, no npm, sh or tsx CLI in between
// to swallow or duplicate SIGTERM. It loads the TypeScript sources through tsx's loader in this
// same process (resolved from this file, so it runs from any working directory).
import "tsx";

await import("./porter.ts");
