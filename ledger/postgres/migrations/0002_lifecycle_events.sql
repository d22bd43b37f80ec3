-- The lifecycle log: one row per thing that happened to a run, written in the
-- transaction of the change it describes. Append-only: rows are never changed.

CREATE TABLE lifecycle_events (
    seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id      TEXT NOT NULL REFERENCES runs(id),
    type        TEXT NOT NULL,
    mutation_id TEXT NOT NULL DEFAULT '',
    data        TEXT,
    at          BIGINT NOT NULL
);
CREATE INDEX lifecycle_events_run ON lifecycle_events(run_id, seq);

CREATE FUNCTION lifecycle_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'lifecycle events are append-only';
END;
$$;

CREATE TRIGGER lifecycle_events_no_update BEFORE UPDATE OR DELETE ON lifecycle_events
    FOR EACH ROW EXECUTE FUNCTION lifecycle_events_append_only();

CREATE TRIGGER lifecycle_events_no_truncate BEFORE TRUNCATE ON lifecycle_events
    FOR EACH STATEMENT EXECUTE FUNCTION lifecycle_events_append_only();
