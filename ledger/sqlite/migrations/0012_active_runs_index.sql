-- A workflow's active runs (status = ? AND workflow = ?), read at every scheduler
-- pass, were read through runs_status on the status alone: every active run of every
-- workflow, each row read to compare its workflow (or, once ANALYZE has run, through
-- runs_workflow: every run of the workflow). With the workflow after the status the
-- lookup reads the workflow's active runs only; the reads by status alone (the active
-- runs at start, the listing by status) use its prefix. The workflow never changes, so
-- an entry is rewritten when the status changes, as before.
--
-- runs_workflow needs no change here: the rowid ends every entry of an index of a
-- rowid table, so (workflow, handler, created_at) already orders a handler's runs as
-- the newest-first read does (created_at DESC, rowid DESC), which reads one entry.
DROP INDEX runs_status;
CREATE INDEX runs_status ON runs(status, workflow);
