-- A request to cancel a run made while its mutation's outcome was unknown is kept in
-- the run's row, as the data of its cancel_requested event ({"by":…,"reason":…}), NULL
-- when there is none: the transition that records the outcome reads the row anyway and
-- cancels the run in its own transaction, where the runtime read the run's lifecycle
-- log for the request after each outcome.
--
-- A run still waiting for its outcome (active or paused, its mutation in_flight,
-- needs_reconcile or indeterminate) that a request was logged for takes its latest.
ALTER TABLE runs ADD COLUMN cancel_request TEXT;

UPDATE runs SET cancel_request = (
        SELECT COALESCE(e.data, '{}') FROM lifecycle_events e
        WHERE e.run_id = runs.id AND e.type = 'cancel_requested'
        ORDER BY e.seq DESC LIMIT 1)
    WHERE (status = 'active' OR status LIKE 'paused:%')
    AND EXISTS (SELECT 1 FROM mutations m WHERE m.run_id = runs.id
        AND m.status IN ('in_flight', 'needs_reconcile', 'indeterminate'))
    AND EXISTS (SELECT 1 FROM lifecycle_events e
        WHERE e.run_id = runs.id AND e.type = 'cancel_requested');
