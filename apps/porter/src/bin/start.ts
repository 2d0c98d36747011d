// `npm start`: migrate, seed, build and run the console and one worker per pool, on DATABASE_URL
// or an embedded PostgreSQL under .porter/ (see apps/porter/src/launcher/run-launcher.ts).
import { runLauncher } from "../launcher/run-launcher";

process.exit(await runLauncher());
