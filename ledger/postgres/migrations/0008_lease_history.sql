-- Lease history: when each lease was last claimed or renewed, each host that held a
-- lease with its last claim or renewal, and the takeovers (a host claiming a lease
-- another host held until it expired unreleased). Both tables are bounded by the
-- claims that write them: lease_hosts drops hosts silent for 7 days when a new host
-- first claims, lease_takeovers keeps the newest 1000 takeovers.
ALTER TABLE leases ADD COLUMN renewed_at TIMESTAMPTZ NOT NULL DEFAULT 'epoch';
UPDATE leases SET renewed_at = claimed_at;
CREATE TABLE lease_hosts (
    owner      TEXT PRIMARY KEY,
    first_seen TIMESTAMPTZ NOT NULL,
    renewed_at TIMESTAMPTZ NOT NULL
);
INSERT INTO lease_hosts (owner, first_seen, renewed_at)
    SELECT owner, MIN(claimed_at), MAX(claimed_at) FROM leases WHERE owner <> '' GROUP BY owner;
CREATE TABLE lease_takeovers (
    id         BIGSERIAL PRIMARY KEY,
    workflow   TEXT NOT NULL,
    from_owner TEXT NOT NULL,
    to_owner   TEXT NOT NULL,
    taken_at   TIMESTAMPTZ NOT NULL,
    -- renewed_at is when from_owner last claimed or renewed the lease it lost.
    renewed_at TIMESTAMPTZ NOT NULL,
    claims     BIGINT NOT NULL
);
