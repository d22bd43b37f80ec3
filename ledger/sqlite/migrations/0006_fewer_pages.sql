-- Fewer pages written per run transition.
--
-- The tables rebuilt here (lifecycle_events, events) are no table's
-- parent: dropping one deletes no row another table refers to, so the rebuild is safe
-- with foreign keys on, and the runner checks them (foreign_key_check) before the
-- migration commits. Every row keeps every column value, seq numbers included.

-- run_snapshots stays a rowid table with its (run_id, seq) index. Clustered on that
-- key (WITHOUT ROWID) it would write one B-tree per snapshot instead of two, but as an
-- index B-tree: a node split rebalances three leaves where a rowid table's append
-- splits one, and a row of more than about 1000 bytes (a 4 KiB page's limit for index
-- B-trees, against 4061 for a table) spills to an overflow page. Measured, it saved
-- pages for snapshots under about 500 bytes and cost more between 600 bytes and 2 KiB.

-- AUTOINCREMENT wrote the sqlite_sequence row in every transaction that appended a
-- lifecycle event or an event. Without it a new seq is the largest stored seq + 1,
-- which differs only after the newest rows are deleted: lifecycle events never are
-- (the append-only triggers), and events never are either (events_no_delete below
-- makes that a rule of the schema), so a seq is still never given out twice.
CREATE TABLE lifecycle_events_new (
    seq         INTEGER PRIMARY KEY,
    run_id      TEXT NOT NULL REFERENCES runs(id),
    type        TEXT NOT NULL,
    mutation_id TEXT NOT NULL DEFAULT '',
    data        TEXT,
    at          INTEGER NOT NULL
);
INSERT INTO lifecycle_events_new (seq, run_id, type, mutation_id, data, at)
    SELECT seq, run_id, type, mutation_id, data, at FROM lifecycle_events;
DROP TABLE lifecycle_events;
ALTER TABLE lifecycle_events_new RENAME TO lifecycle_events;
CREATE INDEX lifecycle_events_run ON lifecycle_events(run_id);

CREATE TRIGGER lifecycle_events_no_update BEFORE UPDATE ON lifecycle_events
BEGIN
    SELECT RAISE(ABORT, 'lifecycle events are append-only');
END;

CREATE TRIGGER lifecycle_events_no_delete BEFORE DELETE ON lifecycle_events
BEGIN
    SELECT RAISE(ABORT, 'lifecycle events are append-only');
END;

-- events: besides the sequence row, two of its indexes are narrowed to the rows their
-- queries read. events_pending holds the pending events only (what the scheduler reads,
-- per topic in seq order): an event leaves it when reserved, and comes back only if
-- released. events_reserved_by holds reserved rows only (a published event has
-- none), read by reserved_by = ?, which implies reserved_by IS NOT NULL.
CREATE TABLE events_new (
    seq         INTEGER PRIMARY KEY,
    workflow    TEXT NOT NULL,
    topic       TEXT NOT NULL,
    message_id  TEXT NOT NULL,
    payload     TEXT,
    status      TEXT NOT NULL,
    reserved_by TEXT REFERENCES runs(id),
    attempt     INTEGER NOT NULL DEFAULT 0,
    caused_by   TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    UNIQUE (workflow, topic, message_id)
);
INSERT INTO events_new (seq, workflow, topic, message_id, payload, status, reserved_by, attempt, caused_by, created_at)
    SELECT seq, workflow, topic, message_id, payload, status, reserved_by, attempt, caused_by, created_at FROM events;
DROP TABLE events;
ALTER TABLE events_new RENAME TO events;
CREATE INDEX events_pending ON events(workflow, topic, seq) WHERE status = 'pending';
CREATE INDEX events_reserved_by ON events(reserved_by) WHERE reserved_by IS NOT NULL;

CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are never deleted: their seq numbers must not be reused');
END;

-- mutations_input_hash served one query, the count of failed mutations with an input
-- hash; holding the failed ones only, it is no longer written when a mutation is
-- recorded and applied.
DROP INDEX mutations_input_hash;
CREATE INDEX mutations_failed_input_hash ON mutations(input_hash) WHERE status = 'failed';

-- handler_state is read by its primary key only; the index on wake_at was written at
-- every consumer commit and read by nothing.
DROP INDEX handler_state_wake;
