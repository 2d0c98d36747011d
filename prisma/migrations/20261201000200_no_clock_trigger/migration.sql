-- The fair-clock rows are written by the statements that insert jobs — enqueue's reservation and
-- redrive (packages/core/src/sql/fair-clock.ts) — so the AFTER INSERT trigger that also created
-- them is redundant, and it cost every enqueue a transition table holding each inserted row
-- (~1 ms per 1000 jobs). Anything else that inserts jobs must insert their (queue, tenant) clock
-- row too, or the claim will not look at that tenant.
DROP TRIGGER jobs_fair_clock_rows ON jobs;
DROP FUNCTION porter_fair_clock_rows();
