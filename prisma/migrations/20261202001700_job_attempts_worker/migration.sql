-- A worker's recent attempts (the console's worker page), newest first, paged by (finished_at,
-- job_id): job_attempts had only its job_id index, so a worker's attempts were a scan of the whole
-- history. job_attempts takes a row per attempt that did not succeed (a success is on its finished
-- row: lean ack), so this index costs nothing on the success path.
CREATE INDEX job_attempts_worker_idx ON job_attempts (worker_id, finished_at DESC);
