-- The W3C traceparent a job was enqueued under (docs/observability.md "Traces"): the producer's
-- `traceparent` field or header, or the context of the API's `porter.enqueue` span when an
-- OpenTelemetry SDK is registered. Each attempt's `porter.attempt` span is its child, so one trace
-- runs producer → enqueue → attempts. NULL when the job came without one (its trace_id is then the
-- producer's or derived from the job id). Kept across retries and lease rescue (the row stays) and
-- copied to finished_jobs and back on redrive. In no index: a claim or heartbeat stays HOT, and a
-- NULL costs nothing in the row (the null bitmap).
ALTER TABLE jobs ADD COLUMN traceparent text;
ALTER TABLE finished_jobs ADD COLUMN traceparent text;
