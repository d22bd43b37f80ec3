-- Execution ids are unique for all time. A plan execution's number is reserved in
-- plan_executions, in the transaction that picks it, before any step runs; each step
-- record of an execution is unique.

CREATE TABLE plan_executions (
    plan_id     TEXT NOT NULL,
    number      INTEGER NOT NULL,
    reserved_at INTEGER,
    PRIMARY KEY (plan_id, number)
);

-- Executions recorded before this version keep their numbers.
INSERT OR IGNORE INTO plan_executions (plan_id, number)
SELECT plan_id, CAST(substr(execution_id, length(plan_id) + 2) AS INTEGER)
FROM execution_log
WHERE plan_id != '' AND substr(execution_id, 1, length(plan_id) + 1) = plan_id || '/'
  AND CAST(substr(execution_id, length(plan_id) + 2) AS INTEGER) > 0;

-- Records that two racing executors wrote under one id before this version are kept,
-- renamed after their row so that the newer one no longer claims the id.
UPDATE execution_log SET execution_id = execution_id || '#duplicate-' || id
WHERE id NOT IN (SELECT MIN(id) FROM execution_log GROUP BY execution_id, step_id);

CREATE UNIQUE INDEX execution_log_unique ON execution_log(execution_id, step_id);
