-- A run's snapshot after its first is stored as what changed since the one before it
-- (the fields whose value differs, and under "~" the names of those that became
-- empty): a binary that reads run_snapshots.run as the whole run must not read this
-- ledger, and refuses it as newer. The table is unchanged; the column says so.
COMMENT ON COLUMN run_snapshots.run IS
    'the run''s JSON (starting {"id"), or what changed since the run''s snapshot numbered one less (starting {"~":[)';
