// `npm run chaos [-- options]`: the full chaos run (a few minutes) against a PostgreSQL cluster
// of its own; prints its table and exits 1 when an invariant fails. `--short` runs the form that
// `npm test` runs (apps/porter/src/chaos/chaos.int.test.ts).
import { randomInt } from "node:crypto";
import { parseArgs } from "node:util";
import { FULL_CHAOS, SHORT_CHAOS } from "../chaos/profiles";
import { runChaos } from "../chaos/run-chaos";

const USAGE = `Usage: npm run chaos [-- options]

Starts a throwaway PostgreSQL cluster, a fleet of worker processes and producers, then SIGKILLs
workers, terminates a LISTEN connection, restarts PostgreSQL immediately once, lets the fleet
settle and checks that nothing was lost, duplicated, left running or unrecorded.

Options:
  --short              the short form (as in npm test, under 90 s)
  --duration-s <n>     length of the chaos phase (default 150, short 22)
  --workers <n>        worker processes (default 3)
  --rate <n>           jobs enqueued per second (default 60, short 40)
  --restarts <n>       immediate PostgreSQL restarts, spread over the run (default 1)
  --seed <n>           seed of the job mix and the victims (default random; printed)
  --log-dir <dir>      where worker and server logs are written (default .porter/chaos/<seed>)
  -h, --help           show this help
`;

const { values } = parseArgs({
  options: {
    short: { type: "boolean" },
    "duration-s": { type: "string" },
    workers: { type: "string" },
    rate: { type: "string" },
    restarts: { type: "string" },
    seed: { type: "string" },
    "log-dir": { type: "string" },
    help: { type: "boolean", short: "h" },
  },
  strict: true,
});
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const int = (name: string, value: string | undefined): number | undefined => {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) {
    process.stderr.write(`--${name} must be a positive integer, got "${value}"\n\n${USAGE}`);
    process.exit(2);
  }
  return n;
};

const profile = values.short ? SHORT_CHAOS : FULL_CHAOS;
const durationS = int("duration-s", values["duration-s"]);
const seed = int("seed", values.seed) ?? randomInt(1, 2 ** 31);
const base = profile(durationS ? durationS * 1000 : undefined);
const restarts = int("restarts", values.restarts);
const options = {
  ...base,
  ...(restarts ? { restartsAtMs: Array.from({ length: restarts }, (_, i) => Math.round((base.durationMs * (i + 1)) / (restarts + 1))) } : {}),
  seed,
  workers: int("workers", values.workers) ?? 3,
  ...(values.rate ? { jobsPerSecond: int("rate", values.rate)! } : {}),
  logDir: values["log-dir"] ?? `.porter/chaos/${seed}`,
  onProgress: (message: string) => process.stderr.write(`[chaos] ${message}\n`),
};
// Ctrl-C: exit through process.exit so the cluster's exit hook stops the server.
process.on("SIGINT", () => process.exit(130));
process.on("SIGTERM", () => process.exit(143));

const report = await runChaos(options);
process.stdout.write(`${report.table}\n\nworker and server logs: ${options.logDir}\n`);
process.exit(report.isOk ? 0 : 1);
