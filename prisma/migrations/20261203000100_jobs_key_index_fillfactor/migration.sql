-- Issue 15, the claim's cost: room in the leaves of the two unique indexes of `jobs`.
--
-- The claim is not a HOT update (it changes `state`, which the claim and running indexes name), so
-- every claimed row gets a second entry in `jobs_pkey` and `jobs_job_id_key`, beside its first (same
-- key, the new version's ctid). A claim takes consecutive jobs, so it adds an entry for most entries
-- of the leaves it touches. Ids and UUIDv7 job ids grow at the indexes' right edge, whose leaves
-- split at the default fillfactor 90: no room for them. Each full leaf first tries a bottom-up
-- deletion — which visits the heap and finds nothing to delete, the old versions being this claim's
-- own — then deduplicates or splits. At 45 a leaf takes a second entry for each of its entries.
-- Measured with `bench/src/probe/claim-callgrind.ts` (instructions counted by valgrind, 8 claims of
-- 450 jobs): 167.9k → 156.7k instructions per claimed job (−6.7%); the two indexes are twice the
-- pages for the same backlog (a live job's two entries: 40 B of 8 kB → 80 B).
--
-- SET (fillfactor) applies to leaves split from now on (no rebuild, SHARE UPDATE EXCLUSIVE lock); the
-- indexes' leaves turn over as jobs are claimed and finished.
ALTER INDEX jobs_pkey SET (fillfactor = 45);
ALTER INDEX jobs_job_id_key SET (fillfactor = 45);
