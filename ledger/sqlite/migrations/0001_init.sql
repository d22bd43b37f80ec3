-- Initial scripthost ledger schema. Times are unix nanoseconds (UTC); NULL means unset.
-- JSON columns hold the raw JSON text; NULL means absent.

CREATE TABLE workflows (
    name           TEXT PRIMARY KEY,
    latest_version INTEGER NOT NULL,
    paused         INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL
);

CREATE TABLE workflow_versions (
    workflow   TEXT NOT NULL REFERENCES workflows(name),
    version    INTEGER NOT NULL,
    language   TEXT NOT NULL DEFAULT '',
    path       TEXT NOT NULL DEFAULT '',
    source     BLOB,
    hash       TEXT NOT NULL,
    definition TEXT,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (workflow, version)
);

CREATE TABLE runs (
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
    retry_from_emitting INTEGER NOT NULL DEFAULT 0,
    prepared            TEXT,
    reservations        TEXT,
    wake_at             INTEGER,
    input_state         TEXT,
    output_state        TEXT,
    outcome             TEXT,
    error               TEXT NOT NULL DEFAULT '',
    error_class         TEXT NOT NULL DEFAULT '',
    not_before          INTEGER,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL
);
CREATE INDEX runs_status ON runs(status, phase);
CREATE INDEX runs_workflow ON runs(workflow, handler, created_at);

CREATE TABLE run_snapshots (
    run_id TEXT NOT NULL REFERENCES runs(id),
    seq    INTEGER NOT NULL,
    phase  TEXT NOT NULL,
    status TEXT NOT NULL,
    run    TEXT NOT NULL,
    at     INTEGER NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE mutations (
    id                 TEXT PRIMARY KEY,
    run_id             TEXT UNIQUE REFERENCES runs(id),
    workflow           TEXT NOT NULL DEFAULT '',
    handler            TEXT NOT NULL DEFAULT '',
    namespace          TEXT NOT NULL,
    method             TEXT NOT NULL,
    params             TEXT,
    input_hash         TEXT NOT NULL DEFAULT '',
    idempotency_key    TEXT NOT NULL UNIQUE,
    status             TEXT NOT NULL,
    result             TEXT,
    error              TEXT NOT NULL DEFAULT '',
    error_class        TEXT NOT NULL DEFAULT '',
    reconcile_attempts INTEGER NOT NULL DEFAULT 0,
    next_reconcile_at  INTEGER,
    resolved_by        TEXT NOT NULL DEFAULT '',
    resolved_at        INTEGER,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL
);
CREATE INDEX mutations_input_hash ON mutations(input_hash, status);
CREATE INDEX mutations_status ON mutations(status, next_reconcile_at);

CREATE TABLE events (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
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
CREATE INDEX events_status ON events(workflow, topic, status, seq);
CREATE INDEX events_reserved_by ON events(reserved_by);

CREATE TABLE handler_state (
    workflow   TEXT NOT NULL,
    handler    TEXT NOT NULL,
    state      TEXT,
    wake_at    INTEGER,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (workflow, handler)
);
CREATE INDEX handler_state_wake ON handler_state(wake_at);

CREATE TABLE schedules (
    workflow    TEXT NOT NULL,
    producer    TEXT NOT NULL,
    next_run_at INTEGER,
    last_run_at INTEGER,
    PRIMARY KEY (workflow, producer)
);

CREATE TABLE execution_log (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    execution_id TEXT NOT NULL,
    plan_id      TEXT NOT NULL DEFAULT '',
    step_id      TEXT NOT NULL DEFAULT '',
    seq          INTEGER NOT NULL DEFAULT 0,
    tool         TEXT NOT NULL DEFAULT '',
    arguments    TEXT,
    started_at   INTEGER,
    ended_at     INTEGER,
    duration_ms  INTEGER NOT NULL DEFAULT 0,
    success      INTEGER NOT NULL DEFAULT 0,
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
