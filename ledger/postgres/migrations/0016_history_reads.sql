-- The scheduler's reads of a pass cost the same whatever the ledger's history.
--
-- The newest run of a handler (ORDER BY created_at DESC, ord DESC LIMIT 1) was a sort
-- over every run of the handler: runs_workflow ended at created_at, so the planner read
-- all of the handler's entries and their rows to find the one with the largest ord
-- among equal times. Ending in ord, the index holds the query's whole order, and a
-- backward scan reads one entry.
DROP INDEX runs_workflow;
CREATE INDEX runs_workflow ON runs(workflow, handler, created_at, ord);

-- A workflow's active runs (status = $1 AND workflow = $2) were read through the
-- status alone: every active run of every workflow, filtered by workflow. With the
-- workflow after the status the lookup reads the workflow's active runs only; the reads
-- by status alone (the active runs at start, the listing by status) use its prefix.
-- Neither column changes once set but the status, which rewrote the entry already.
DROP INDEX runs_status;
CREATE INDEX runs_status ON runs(status, workflow);
