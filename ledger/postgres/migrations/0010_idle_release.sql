-- idle_claims is the claim (leases.claims) under which the lease was last given back
-- by a holder whose last pass found nothing to do; 0 when the last release was not so.
-- A host whose run-once loop began before that claim takes it as its own pass that
-- found the workflow idle, and ends without claiming the lease for one more pass.
ALTER TABLE leases ADD COLUMN idle_claims BIGINT NOT NULL DEFAULT 0;
