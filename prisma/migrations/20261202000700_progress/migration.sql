-- Durable progress and checkpoints of a running attempt (ctx.progress, ctx.checkpoint).
--
-- jobs.progress: the attempt's last reported progress {fraction?, message?, step?} (≤ ~400 bytes,
-- validated by the SDK), written by the lease keeper's heartbeat statement (extend-leases.ts), so a
-- progress report costs no round trip of its own. In no index, like the lease columns: a heartbeat
-- stays a HOT update.
-- jobs.checkpoint: the handler's last durable checkpoint (≤ 16 KiB of JSON, validated by the SDK),
-- one fenced UPDATE per ctx.checkpoint call (save-checkpoint.ts). Kept across retries, lease rescue
-- and redrive: the next attempt of the job reads it (the claim returns it) to resume. In no index.
-- Both are copied to finished_jobs when the job finishes, so the job page shows their last value.
ALTER TABLE jobs ADD COLUMN progress jsonb, ADD COLUMN checkpoint jsonb;
ALTER TABLE finished_jobs ADD COLUMN progress jsonb, ADD COLUMN checkpoint jsonb;
