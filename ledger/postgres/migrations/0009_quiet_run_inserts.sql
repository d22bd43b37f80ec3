-- A run a host inserts for itself (its first durable write, at the mutation's in-flight
-- record, or a run created prepared, committed or skipped) wakes nobody: the host that
-- holds the workflow's lease is driving it. Only a retry, which an operator may create
-- from another process, wakes the workflow's hosts. A NOTIFY makes its transaction's
-- commit take the server's one notification lock until the commit is flushed, so that
-- every run's first commit, on every host, waited for the one before.
DROP TRIGGER runs_notify_insert ON runs;
CREATE TRIGGER runs_notify_insert AFTER INSERT ON runs
    FOR EACH ROW WHEN (NEW.retry_of IS NOT NULL) EXECUTE FUNCTION scripthost_notify();
