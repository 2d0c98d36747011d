// Probe: runs the fairness scenario alone with small sizes.
import { createProgress } from "../progress";
import { fairness } from "../scenarios/fairness";
const r = await fairness("postgres://postgres@127.0.0.1:5432/postgres", { quietJobs: 1000, noisyFactor: 10, arrivalsPerS: 50, arrivalSeconds: 5, burnJobs: 10000 }, createProgress());
console.log(r.markdown);
process.exit(0);
