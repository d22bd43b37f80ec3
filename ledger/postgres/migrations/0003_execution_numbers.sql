-- Execution ids are unique for all time. A plan execution's number is reserved in
-- plan_executions, in the transaction that picks it, before any step runs; each step
-- record of an execution is unique.

CREATE TABLE plan_executions (
    plan_id     TEXT NOT NULL,
    number      INTEGER NOT NULL,
    reserved_at BIGINT,
    PRIMARY KEY (plan_id, number)
);

-- Executions recorded before this version keep their numbers.
INSERT INTO plan_executions (plan_id, number)
SELECT DISTINCT plan_id, n FROM (
    SELECT plan_id, CASE WHEN substring(execution_id FROM length(plan_id) + 2) ~ '^[0-9]{1,9}'
        THEN CAST(substring(substring(execution_id FROM length(plan_id) + 2) FROM '^[0-9]{1,9}') AS INTEGER)
    END AS n
    FROM execution_log
    WHERE plan_id != '' AND substr(execution_id, 1, length(plan_id) + 1) = plan_id || '/'
) numbered
WHERE n > 0
ON CONFLICT DO NOTHING;

-- Records that two racing executors wrote under one id before this version are kept,
-- renamed after their row so that the newer one no longer claims the id.
UPDATE execution_log SET execution_id = execution_id || '#duplicate-' || id
WHERE id NOT IN (SELECT MIN(id) FROM execution_log GROUP BY execution_id, step_id);

CREATE UNIQUE INDEX execution_log_unique ON execution_log(execution_id, step_id);
