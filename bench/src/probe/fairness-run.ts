// Probe: runs the fairness scenario alone with small sizes.
import { createProgress } from "../progress";
import { FAIRNESS_QUICK, fairness } from "../scenarios/fairness";

const r = await fairness("postgres://postgres@127.0.0.1:5432/postgres", FAIRNESS_QUICK, createProgress());
console.log(r.markdown);
process.exit(0);
