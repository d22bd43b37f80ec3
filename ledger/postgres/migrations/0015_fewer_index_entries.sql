-- Fewer index entries written per consumer run.
--
-- runs.ord and mutations.ord are identity columns that order rows created in the same
-- nanosecond; no query looks a row up by them, yet each carried a unique index, and a
-- run's row and its mutation's row are each written twice per run (an insert, and an
-- update that changes an indexed column, which adds an entry to every index of the
-- table): four index entries per run that nothing read. The identity still hands out
-- each number once.
ALTER TABLE runs DROP CONSTRAINT runs_ord_key;
ALTER TABLE mutations DROP CONSTRAINT mutations_ord_key;

-- Every query of events by reserved_by also asks for status = 'reserved'. The index
-- held every event ever reserved, consumed ones included, and the commit that consumes
-- an event added an entry for it; now it holds the events reserved at the moment.
DROP INDEX events_reserved_by;
CREATE INDEX events_reserved_by ON events(reserved_by) WHERE status = 'reserved';
