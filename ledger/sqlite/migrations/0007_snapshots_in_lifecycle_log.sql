-- A run's snapshots move into its lifecycle log: each is a lifecycle event of type
-- 'snapshot' whose data is the run as JSON. A transition then writes its snapshots in
-- the one INSERT that already carries its lifecycle events, instead of one INSERT per
-- snapshot into a table of its own with its own (run_id, seq) index: two B-trees
-- fewer written by every transition. The store reads a run's snapshots back from the
-- log in seq order (their phase and status from the JSON) and leaves them out of the
-- lifecycle events it lists.
--
-- Every snapshot is copied in its run's seq order, so a run's snapshots keep their
-- order; they take seq numbers after every existing event. The table is no table's
-- parent: dropping it deletes no row another table refers to.

INSERT INTO lifecycle_events (run_id, type, mutation_id, data, at)
    SELECT run_id, 'snapshot', '', run, at FROM run_snapshots ORDER BY run_id, seq;
DROP TABLE run_snapshots;
