-- Fewer index entries written per run transition. An update that changes an indexed
-- column (every status change of an event or a mutation) is not heap-only: it adds an
-- entry to every index of the table, except a partial index whose predicate the new
-- row fails. So these indexes hold only the rows their queries read.
--
-- The SQLite ledger's other changes of version 6 have no counterpart here: a table and
-- its primary key are always two structures in PostgreSQL (no clustered tables), and
-- an identity column's sequence writes its WAL record once per 32 numbers, not per
-- insert as SQLite's AUTOINCREMENT row did.

-- The scheduler reads a topic's pending events in seq order: an event leaves this
-- index when reserved, and comes back only if released.
DROP INDEX events_status;
CREATE INDEX events_pending ON events(workflow, topic, seq) WHERE status = 'pending';

-- Read by reserved_by = $1, which implies reserved_by IS NOT NULL: a published event
-- has no entry.
DROP INDEX events_reserved_by;
CREATE INDEX events_reserved_by ON events(reserved_by) WHERE reserved_by IS NOT NULL;

-- One query reads it, the count of failed mutations with an input hash.
DROP INDEX mutations_input_hash;
CREATE INDEX mutations_failed_input_hash ON mutations(input_hash) WHERE status = 'failed';

-- handler_state is read by its primary key only; without the index on wake_at, a
-- consumer commit's update of the handler's row can be heap-only.
DROP INDEX handler_state_wake;
