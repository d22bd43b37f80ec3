-- Agent sessions: a task run by a model, its model turns and its tool calls. A tool
-- call that mutates also has a row in mutations (mutation_id).

CREATE TABLE agent_sessions (
    id         TEXT PRIMARY KEY,
    task       TEXT NOT NULL,
    spec       TEXT,
    status     TEXT NOT NULL,
    state      TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE agent_turns (
    session_id        TEXT NOT NULL REFERENCES agent_sessions(id),
    ord               BIGINT NOT NULL,
    step_id           TEXT NOT NULL,
    turn              INTEGER NOT NULL,
    request           TEXT,
    response          TEXT,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    retries           INTEGER NOT NULL DEFAULT 0,
    started_at        INTEGER NOT NULL,
    duration_ms       BIGINT NOT NULL DEFAULT 0,
    recorded_at       INTEGER NOT NULL,
    UNIQUE (session_id, step_id, turn)
);

CREATE TABLE agent_tool_calls (
    session_id  TEXT NOT NULL REFERENCES agent_sessions(id),
    ord         BIGINT NOT NULL,
    call_id     TEXT NOT NULL,
    step_id     TEXT NOT NULL,
    turn        INTEGER NOT NULL,
    seq         INTEGER NOT NULL,
    tool        TEXT NOT NULL,
    arguments   TEXT,
    status      TEXT NOT NULL,
    result      TEXT,
    error       TEXT NOT NULL DEFAULT '',
    mutation_id TEXT NOT NULL DEFAULT '',
    decision    TEXT NOT NULL DEFAULT '',
    duration_ms BIGINT NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    UNIQUE (session_id, call_id)
);
