-- Issue 15, the ack's cost: `state` in the key of the running set's index.
--
-- jobs_running_idx (queue_id, tenant_id) WHERE state = 'RUNNING' gets an entry for every claimed row
-- (the claim is not a HOT update). Its key did not change in the claim, so PostgreSQL marked each of
-- those inserts "logically unchanged", and a full leaf was first given a bottom-up deletion pass:
-- a visit of the heap pages behind the leaf's duplicates to find versions no snapshot needs. The
-- entries it finds are those of jobs acked since, and a pass costs the claim — the serial part of a
-- burn-down — a heap visit per candidate. With `state` in the key, which the claim changes, the
-- insert carries no such mark: a full leaf removes the entries index scans already marked dead
-- (the limits' counts and the rescues read through this index and mark what they find dead), then
-- deduplicates or splits; VACUUM removes the rest. The rows in the index are the same, and every
-- read of it (`state = 'RUNNING'` with the queue, or the queue and tenant) still matches it.
-- Measured (docs/performance.md "The ack, counted"):
-- - bench/src/probe/claim-callgrind.ts, ACKS=1 (each claim's jobs acked in statements of 150):
--   300.6k → 265.8k instructions per claimed and acked job (−11.6%);
-- - bench/src/probe/claim-ab.ts 100000 4, in-process burn-down, medians: uncapped 1.02× (PostgreSQL
--   CPU per job −1.7%), the policy path 1.07× (−5.8%).
--
-- Built beside the old index, then swapped by name.
CREATE INDEX jobs_running_idx_keyed ON jobs (queue_id, tenant_id, state) WHERE state = 'RUNNING';
DROP INDEX jobs_running_idx;
ALTER INDEX jobs_running_idx_keyed RENAME TO jobs_running_idx;
