// `npm run porter -- <command>`: Porter's operations CLI (see apps/porter/src/cli/main.ts).
import { runCli } from "../cli/main";

process.exitCode = await runCli(process.argv.slice(2));
