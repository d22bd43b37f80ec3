-- A row of the lifecycle log holds the consecutive events of one run that one write
-- logs, up to 16: the first in its columns, the others in more (a JSON array of
-- {"type","mutation_id","data","at"}), numbered on from the row's seq. The log's
-- sequence steps by 16 from here on, so that a row's events never reach the next row's
-- number; the rows written before keep their numbers, one event each (more NULL).
ALTER TABLE lifecycle_events ADD COLUMN more TEXT;
ALTER TABLE lifecycle_events ALTER COLUMN seq SET INCREMENT BY 16;

-- Likewise a write's snapshots of one run share a row of run_snapshots: the first in
-- its columns, the others in more (a JSON array of {"run","at"}), numbered on from the
-- row's seq; the next row of the run takes the number after the last.
ALTER TABLE run_snapshots ADD COLUMN more TEXT;
