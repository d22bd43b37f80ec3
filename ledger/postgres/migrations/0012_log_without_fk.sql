-- The run's log tables, run_snapshots and lifecycle_events, lose their foreign keys
-- into runs. Each inserted log row ran PostgreSQL's referential check: a lookup of the
-- run and a FOR KEY SHARE lock on its row, the row the same transaction had just
-- inserted or updated. A consumer run appends sixteen log rows (seven snapshots, nine
-- events), so the check was a measurable part of the server's work per run.
--
-- A log row still names a run that exists: the store writes a snapshot only with the
-- write of its run, logs its own events only about a run its transaction read or
-- wrote, and looks up the run of any event a caller attaches that names a run the
-- write did not write, refusing it (ledger.ErrNotFound) when there is none. Runs are
-- never deleted, and a trigger now refuses a DELETE (by hand) that would leave log rows
-- naming a run that is gone, as the foreign keys did. The other foreign keys into runs (mutations.run_id,
-- events.reserved_by, runs.retry_of and runs.superseded_by) stay: they guard state.
ALTER TABLE run_snapshots DROP CONSTRAINT run_snapshots_run_id_fkey;
ALTER TABLE lifecycle_events DROP CONSTRAINT lifecycle_events_run_id_fkey;

CREATE FUNCTION runs_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'runs are never deleted: their snapshots and lifecycle events name them';
END;
$$;
CREATE TRIGGER runs_no_delete BEFORE DELETE ON runs
    FOR EACH ROW EXECUTE FUNCTION runs_kept();
