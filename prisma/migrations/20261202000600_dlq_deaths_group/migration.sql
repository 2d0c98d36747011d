-- A group's deaths, newest first: the "every death" page of a failure group (dlq.groups.jobs with
-- dead_only false) reads this range instead of filtering every death of 14 days by group.
CREATE INDEX dlq_deaths_group_id_died_at_idx ON dlq_deaths (group_id, died_at);
