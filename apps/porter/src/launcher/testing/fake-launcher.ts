// Test fixture: a launcher in miniature. Starts one guarded child (a node process that only
// waits) under the Supervisor, prints `CHILD <pid>`, and waits to be killed — so a test can
// SIGKILL it and check the child does not outlive it.
//   node --import tsx fake-launcher.ts <guard url>
import { Supervisor } from "../supervisor";

const guard = process.argv[2]!;
const supervisor = new Supervisor({ output: (name, line) => process.stdout.write(`[${name}] ${line}\n`), log: () => {} });
const child = supervisor.start({
  name: "sleeper",
  command: process.execPath,
  args: [
    "--import",
    guard,
    "-e",
    "process.on('SIGTERM', () => { console.log('graceful stop'); process.exit(0); }); setInterval(() => {}, 1000); console.log('up');",
  ],
  cwd: process.cwd(),
  env: { ...process.env, PORTER_PARENT_GUARD: "1" },
  restart: false,
});
child.onLine = (line) => {
  if (line === "up") process.stdout.write(`CHILD ${child.pid}\n`);
};
setInterval(() => {}, 1000);
