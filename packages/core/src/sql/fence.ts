/**
 * The fence of a worker's write to its own attempts (sql/transitions.ts: `state = 'RUNNING' AND
 * lease_token = $token AND attempt = $attempt`), as SQL: row `j` of `jobs` is the attempt `i`
 * names (`i.id`, `i.token`, `i.attempt`) and still RUNNING.
 *
 * `state` is compared as text on purpose. Written `j.state = 'RUNNING'`, the guard matches the
 * predicate of `jobs_running_idx`, and with statistics that count few RUNNING rows — taken while
 * little ran, as between bursts — the planner read the whole running set through that index and
 * hash-joined it to the batch: an ack of 20 read all 5,000 RUNNING rows, and every ack, failure,
 * start mark, heartbeat and effect did so once per statement. Compared as text the partial index
 * cannot serve the guard, and each row is found by its primary key
 * (fenced-writes-plan.int.test.ts). `sql/routines/effects.sql` writes the same guard for its
 * scalar arguments.
 */
export const fenceSql = (j = "j", i = "i"): string =>
  `${j}.id = ${i}.id AND ${j}.lease_token = ${i}.token AND ${j}.attempt = ${i}.attempt AND ${isRunningById(j)}`;

/**
 * `j` is RUNNING, for a statement that has already named its rows by id (or job_id): compared as
 * text so that `jobs_running_idx` cannot be chosen over the key (see {@link fenceSql}).
 */
export const isRunningById = (j = "j"): string => `${j}.state::text = 'RUNNING'`;
