-- Lease history, as a PostgreSQL ledger keeps it (its migration 8): the hosts that
-- held leases and the takeovers between them. A SQLite ledger has one host and no
-- leases, so these tables stay empty; they keep the two schemas the same shape.
-- Times are Unix nanoseconds.
CREATE TABLE lease_hosts (
    owner      TEXT PRIMARY KEY,
    first_seen INTEGER NOT NULL,
    renewed_at INTEGER NOT NULL
);
CREATE TABLE lease_takeovers (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    workflow   TEXT NOT NULL,
    from_owner TEXT NOT NULL,
    to_owner   TEXT NOT NULL,
    taken_at   INTEGER NOT NULL,
    renewed_at INTEGER NOT NULL,
    claims     INTEGER NOT NULL
);
