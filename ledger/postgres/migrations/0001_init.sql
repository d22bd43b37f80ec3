-- Initial scripthost ledger schema for PostgreSQL. Times are unix nanoseconds (UTC),
-- so that they keep the nanosecond precision the ledger promises; NULL means unset.
-- JSON columns hold the raw JSON text as written (not jsonb, which would reformat it).

CREATE TABLE workflows (
    name           TEXT PRIMARY KEY,
    latest_version INTEGER NOT NULL,
    paused         BOOLEAN NOT NULL DEFAULT false,
    created_at     BIGINT NOT NULL
);

CREATE TABLE workflow_versions (
    workflow   TEXT NOT NULL REFERENCES workflows(name),
    version    INTEGER NOT NULL,
    language   TEXT NOT NULL DEFAULT '',
    path       TEXT NOT NULL DEFAULT '',
    source     BYTEA,
    hash       TEXT NOT NULL,
    definition TEXT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (workflow, version)
);

CREATE TABLE runs (
    ord                 BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    id                  TEXT PRIMARY KEY,
    workflow            TEXT NOT NULL,
    version             INTEGER NOT NULL,
    handler             TEXT NOT NULL,
    kind                TEXT NOT NULL,
    phase               TEXT NOT NULL,
    status              TEXT NOT NULL,
    retry_of            TEXT REFERENCES runs(id),
    superseded_by       TEXT REFERENCES runs(id),
    attempt             INTEGER NOT NULL DEFAULT 1,
    retry_from_emitting BOOLEAN NOT NULL DEFAULT false,
    prepared            TEXT,
    reservations        TEXT,
    wake_at             BIGINT,
    input_state         TEXT,
    output_state        TEXT,
    outcome             TEXT,
    error               TEXT NOT NULL DEFAULT '',
    error_class         TEXT NOT NULL DEFAULT '',
    not_before          BIGINT,
    created_at          BIGINT NOT NULL,
    updated_at          BIGINT NOT NULL
);
CREATE INDEX runs_status ON runs(status, phase);
CREATE INDEX runs_workflow ON runs(workflow, handler, created_at);

CREATE TABLE run_snapshots (
    run_id TEXT NOT NULL REFERENCES runs(id),
    seq    INTEGER NOT NULL,
    phase  TEXT NOT NULL,
    status TEXT NOT NULL,
    run    TEXT NOT NULL,
    at     BIGINT NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE mutations (
    ord                BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    id                 TEXT PRIMARY KEY,
    run_id             TEXT CONSTRAINT mutations_run_id_key UNIQUE REFERENCES runs(id),
    workflow           TEXT NOT NULL DEFAULT '',
    handler            TEXT NOT NULL DEFAULT '',
    namespace          TEXT NOT NULL,
    method             TEXT NOT NULL,
    params             TEXT,
    input_hash         TEXT NOT NULL DEFAULT '',
    idempotency_key    TEXT NOT NULL CONSTRAINT mutations_idempotency_key_key UNIQUE,
    status             TEXT NOT NULL,
    result             TEXT,
    error              TEXT NOT NULL DEFAULT '',
    error_class        TEXT NOT NULL DEFAULT '',
    reconcile_attempts INTEGER NOT NULL DEFAULT 0,
    next_reconcile_at  BIGINT,
    resolved_by        TEXT NOT NULL DEFAULT '',
    resolved_at        BIGINT,
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL
);
CREATE INDEX mutations_input_hash ON mutations(input_hash, status);
CREATE INDEX mutations_status ON mutations(status, next_reconcile_at);

CREATE TABLE events (
    seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workflow    TEXT NOT NULL,
    topic       TEXT NOT NULL,
    message_id  TEXT NOT NULL,
    payload     TEXT,
    status      TEXT NOT NULL,
    reserved_by TEXT REFERENCES runs(id),
    attempt     INTEGER NOT NULL DEFAULT 0,
    caused_by   TEXT NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL,
    UNIQUE (workflow, topic, message_id)
);
CREATE INDEX events_status ON events(workflow, topic, status, seq);
CREATE INDEX events_reserved_by ON events(reserved_by);

CREATE TABLE handler_state (
    workflow   TEXT NOT NULL,
    handler    TEXT NOT NULL,
    state      TEXT,
    wake_at    BIGINT,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (workflow, handler)
);
CREATE INDEX handler_state_wake ON handler_state(wake_at);

CREATE TABLE schedules (
    workflow    TEXT NOT NULL,
    producer    TEXT NOT NULL,
    next_run_at BIGINT,
    last_run_at BIGINT,
    PRIMARY KEY (workflow, producer)
);

CREATE TABLE execution_log (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    execution_id TEXT NOT NULL,
    plan_id      TEXT NOT NULL DEFAULT '',
    step_id      TEXT NOT NULL DEFAULT '',
    seq          INTEGER NOT NULL DEFAULT 0,
    tool         TEXT NOT NULL DEFAULT '',
    arguments    TEXT,
    started_at   BIGINT,
    ended_at     BIGINT,
    duration_ms  BIGINT NOT NULL DEFAULT 0,
    success      BOOLEAN NOT NULL DEFAULT false,
    exit_code    INTEGER NOT NULL DEFAULT 0,
    stdout       TEXT NOT NULL DEFAULT '',
    stderr       TEXT NOT NULL DEFAULT '',
    error        TEXT NOT NULL DEFAULT '',
    error_code   TEXT NOT NULL DEFAULT '',
    result       TEXT,
    diagnostics  TEXT
);
CREATE INDEX execution_log_execution ON execution_log(execution_id, seq);
CREATE INDEX execution_log_plan ON execution_log(plan_id);

-- Leases: which host drives a workflow's runs. A lease whose expires_at has passed
-- (by the database's clock) is free to be taken over.
CREATE TABLE leases (
    workflow   TEXT PRIMARY KEY,
    owner      TEXT NOT NULL DEFAULT '',
    expires_at TIMESTAMPTZ NOT NULL DEFAULT 'epoch',
    claimed_at TIMESTAMPTZ NOT NULL DEFAULT 'epoch',
    claims     BIGINT NOT NULL DEFAULT 0,
    -- wanted_at is when another host last failed to claim it while it was held.
    wanted_at  TIMESTAMPTZ NOT NULL DEFAULT 'epoch'
);

-- Wake-ups: idle hosts LISTEN on scripthost:<schema> and hear the workflow whose
-- events arrived, whose definition or pause changed, or one of whose runs became
-- active again (resumed, resolved, retried).
CREATE FUNCTION scripthost_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'workflows' THEN
        PERFORM pg_notify('scripthost:' || current_schema(), NEW.name);
    ELSE
        PERFORM pg_notify('scripthost:' || current_schema(), NEW.workflow);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER events_notify AFTER INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION scripthost_notify();
CREATE TRIGGER workflows_notify AFTER INSERT OR UPDATE ON workflows
    FOR EACH ROW EXECUTE FUNCTION scripthost_notify();
CREATE TRIGGER runs_notify_insert AFTER INSERT ON runs
    FOR EACH ROW EXECUTE FUNCTION scripthost_notify();
CREATE TRIGGER runs_notify_active AFTER UPDATE OF status ON runs
    FOR EACH ROW WHEN (NEW.status = 'active' AND OLD.status <> 'active') EXECUTE FUNCTION scripthost_notify();
