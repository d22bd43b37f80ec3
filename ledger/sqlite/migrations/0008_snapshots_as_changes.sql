-- A run's snapshots in its lifecycle log are written as changes: the first snapshot of
-- a run holds the whole run as JSON, as before; a later one may hold only the fields
-- that changed since the run's previous snapshot, with the key "~" first, listing the
-- fields that became empty. The store rebuilds each snapshot whole when it reads them.
-- No table changes; the version says how the log is to be read, so that a binary that
-- would show such a snapshot as a whole run does not open the ledger.
SELECT 1;
