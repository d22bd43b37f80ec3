-- The lifecycle log: one row per thing that happened to a run, written in the
-- transaction of the change it describes. Append-only: rows are never changed.

CREATE TABLE lifecycle_events (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id      TEXT NOT NULL REFERENCES runs(id),
    type        TEXT NOT NULL,
    mutation_id TEXT NOT NULL DEFAULT '',
    data        TEXT,
    at          INTEGER NOT NULL
);
CREATE INDEX lifecycle_events_run ON lifecycle_events(run_id, seq);

CREATE TRIGGER lifecycle_events_no_update BEFORE UPDATE ON lifecycle_events
BEGIN
    SELECT RAISE(ABORT, 'lifecycle events are append-only');
END;

CREATE TRIGGER lifecycle_events_no_delete BEFORE DELETE ON lifecycle_events
BEGIN
    SELECT RAISE(ABORT, 'lifecycle events are append-only');
END;
