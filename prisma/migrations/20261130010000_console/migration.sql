-- The console's jobs browser pages through live and finished jobs newest first by
-- (created_at, id); this index keeps each page of finished jobs an index scan at any depth.
-- (The hot `jobs` table gets no new index: it is proportional to the backlog, and every index
-- there costs the enqueue/claim path.)
CREATE INDEX finished_jobs_created_at_id_idx ON finished_jobs (created_at, id);
