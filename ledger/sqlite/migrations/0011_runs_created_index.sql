-- The runs listing pages newest first by (created_at, id): indexed so, a page reads
-- its rows from the index instead of sorting the whole table.
CREATE INDEX runs_created ON runs(created_at, id);
