-- runs_status indexed (status, phase), so every phase a run moved through rewrote its
-- entry. The runs looked up by status are the active ones, few and read whole, their
-- phase checked on the row; indexed by status alone, a run moving from phase to phase
-- leaves the index as it is.
DROP INDEX runs_status;
CREATE INDEX runs_status ON runs(status);
