package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/scripthost/scripthost/ledger"
)

type leaseRow struct {
	Workflow  string    `db:"workflow"`
	Owner     string    `db:"owner"`
	Token     int64     `db:"claims"`
	ExpiresAt time.Time `db:"expires_at"`
	TakenFrom string    `db:"taken_from"`
	RenewedAt time.Time `db:"renewed_at"`
	// PrevRenewed is when the former holder last renewed a lease taken over.
	PrevRenewed time.Time `db:"prev_renewed"`
	// Wanted: another host asked for the lease since it was claimed (RenewLease, Leases).
	Wanted bool `db:"wanted"`
	// Idle: the lease is free, last given back by a pass that found nothing (Leases).
	Idle bool `db:"idle"`
}

func (r leaseRow) lease() ledger.Lease {
	l := ledger.Lease{Workflow: r.Workflow, Owner: r.Owner, Token: r.Token, ExpiresAt: r.ExpiresAt.UTC(), TakenFrom: r.TakenFrom, Wanted: r.Wanted, Idle: r.Idle}
	if !r.RenewedAt.IsZero() && r.RenewedAt.Unix() > 0 {
		l.RenewedAt = r.RenewedAt.UTC()
	}
	if r.Owner == "" {
		l.ExpiresAt = time.Time{}
	}
	return l
}

func millis(d time.Duration) int64 { return max(d.Milliseconds(), 1) }

// ClaimLease takes the workflow's lease when it is free, expired or already owner's.
// A lease held by another host is told apart with a read, so that hosts waiting for
// one cost the database no commit; the claim itself locks the row with SKIP LOCKED,
// so a host never waits for another host's claim. A claim of a lease that nobody else held (free, or owner's) is one
// statement, its own transaction (claimFree), unless it is the host's claim that
// writes the host's renewal in the lease history (one at a time, at most once every
// hostNoteEvery); that claim, the first claim of a workflow and a takeover write the
// lease history beside the claim in a transaction.
func (s *Store) ClaimLease(ctx context.Context, workflow, owner string, ttl time.Duration) (ledger.Lease, bool, error) {
	if workflow == "" || owner == "" {
		return ledger.Lease{}, false, errors.New("postgres: claim lease: workflow and owner are required")
	}
	ctx = unfenced(ctx)
	var cur struct {
		Free  bool `db:"free"`
		Clean bool `db:"clean"`
	}
	err := s.r.GetContext(ctx, &cur, `SELECT owner = '' OR owner = ? OR expires_at < clock_timestamp() AS free,
		owner = '' OR owner = ? AS clean FROM leases WHERE workflow = ?`, owner, owner, workflow)
	missing := errors.Is(err, sql.ErrNoRows)
	switch {
	case missing:
		cur.Free = true
	case err != nil:
		return ledger.Lease{}, false, s.dbErr("claim lease", err)
	}
	if !cur.Free {
		return ledger.Lease{}, false, nil
	}
	note := s.notes.take(owner)
	if !missing && cur.Clean && !note {
		return s.claimFree(ctx, workflow, owner, ttl)
	}
	var row leaseRow
	found, noted := false, false
	defer func() { s.notes.done(owner, note, noted) }()
	err = s.write(ctx, func(ctx context.Context, tx *wtx) error {
		found, noted = false, false
		// The row is made once, by the first claim: an INSERT … ON CONFLICT of a row
		// another host's claim or release holds waits for that host's commit.
		if missing {
			if _, err := tx.ExecContext(ctx, `INSERT INTO leases (workflow) VALUES (?) ON CONFLICT (workflow) DO NOTHING`, workflow); err != nil {
				return s.dbErr("claim lease", err)
			}
		}
		// free.owner is the holder before this claim: another host's, unreleased, when
		// this claim takes an expired lease over.
		err := tx.GetContext(ctx, &row, `WITH free AS (
				SELECT workflow, owner, renewed_at FROM leases
				WHERE workflow = ? AND (owner = '' OR owner = ? OR expires_at < clock_timestamp())
				FOR UPDATE SKIP LOCKED)
			UPDATE leases l SET owner = ?, claims = l.claims + 1, claimed_at = clock_timestamp(), wanted_at = 'epoch',
				renewed_at = clock_timestamp(), expires_at = clock_timestamp() + ? * interval '1 millisecond'
			FROM free WHERE l.workflow = free.workflow
			RETURNING l.workflow, l.owner, l.claims, l.expires_at, l.renewed_at, free.renewed_at AS prev_renewed,
				CASE WHEN free.owner <> ? THEN free.owner ELSE '' END AS taken_from`, workflow, owner, owner, millis(ttl), owner)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // taken by another host a moment ago
		}
		if err != nil {
			return s.dbErr("claim lease", err)
		}
		if noted, err = s.noteClaim(ctx, tx, row, note); err != nil {
			return err
		}
		found = true
		return nil
	})
	if err != nil || !found {
		noted = false
		return ledger.Lease{}, false, err
	}
	return row.lease(), true, nil
}

// claimFree claims a lease that nobody else holds (free, or owner's) in one statement,
// its own transaction: no BEGIN and COMMIT round trips and no write of the lease
// history, which the host's claim less than hostNoteEvery ago wrote. The lease is not
// claimed when another host claimed it meanwhile, or when it is no longer free.
func (s *Store) claimFree(ctx context.Context, workflow, owner string, ttl time.Duration) (ledger.Lease, bool, error) {
	if err := s.writable(); err != nil {
		return ledger.Lease{}, false, err
	}
	var row leaseRow
	err := s.r.GetContext(ctx, &row, `WITH free AS (
			SELECT workflow FROM leases WHERE workflow = ? AND (owner = '' OR owner = ?) FOR UPDATE SKIP LOCKED)
		UPDATE leases l SET owner = ?, claims = l.claims + 1, claimed_at = clock_timestamp(), wanted_at = 'epoch',
			renewed_at = clock_timestamp(), expires_at = clock_timestamp() + ? * interval '1 millisecond'
		FROM free WHERE l.workflow = free.workflow
		RETURNING l.workflow, l.owner, l.claims, l.expires_at, l.renewed_at`, workflow, owner, owner, millis(ttl))
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.Lease{}, false, nil
	}
	if err != nil {
		return ledger.Lease{}, false, s.dbErr("claim lease", err)
	}
	return row.lease(), true, nil
}

// AskLease marks the workflow's lease, which another host holds, wanted by owner: one
// statement, its own transaction, and only when the lease was not asked for since it
// was claimed. The mark only hurries a hand-over, so it need not survive a crash: no
// flush to disk for it (synchronous_commit off for its transaction). A row another
// host is claiming or releasing is skipped, not waited for: the host asks again at
// its next try.
func (s *Store) AskLease(ctx context.Context, workflow, owner string) error {
	if workflow == "" || owner == "" {
		return errors.New("postgres: ask for lease: workflow and owner are required")
	}
	if err := s.writable(); err != nil {
		return err
	}
	_, err := s.r.ExecContext(ctx, `WITH async AS (SELECT set_config('synchronous_commit', 'off', true))
		UPDATE leases SET wanted_at = clock_timestamp() FROM async WHERE workflow =
			(SELECT workflow FROM leases WHERE workflow = ? AND owner <> '' AND owner <> ? AND wanted_at <= claimed_at
			FOR UPDATE SKIP LOCKED)`,
		workflow, owner)
	return s.dbErr("ask for lease", err)
}

// writable returns why the store refuses writes (closed, or the ledger outdated), or
// nil, for the writes sent outside Store.write.
func (s *Store) writable() error {
	select {
	case <-s.closed:
		return errClosed
	case <-s.outdatedCh:
		return s.OutdatedErr()
	default:
		return nil
	}
}

// RenewLease extends a lease its owner still holds, and says whether another host
// asked for it since it was claimed (Lease.Wanted). It is one statement, its own
// transaction, unless it is the host's renewal that writes the host's last renewal in
// the lease history (one claim or renewal at a time, at most once every
// hostNoteEvery: see hostNotes), which writes both in a transaction.
func (s *Store) RenewLease(ctx context.Context, l ledger.Lease, ttl time.Duration) (ledger.Lease, error) {
	ctx = unfenced(ctx)
	const renew = `UPDATE leases SET expires_at = clock_timestamp() + ? * interval '1 millisecond',
			renewed_at = clock_timestamp()
		WHERE workflow = ? AND owner = ? AND claims = ? AND expires_at >= clock_timestamp()
		RETURNING workflow, owner, claims, expires_at, renewed_at, wanted_at > claimed_at AS wanted`
	args := []any{millis(ttl), l.Workflow, l.Owner, l.Token}
	var row leaseRow
	note := s.notes.take(l.Owner)
	var err error
	if note {
		err = s.write(ctx, func(ctx context.Context, tx *wtx) error {
			if err := tx.GetContext(ctx, &row, renew, args...); err != nil {
				return err
			}
			return s.noteRenewal(ctx, tx, l.Owner)
		})
	} else if err = s.writable(); err == nil {
		err = s.r.GetContext(ctx, &row, renew, args...)
	}
	s.notes.done(l.Owner, note, note && err == nil)
	if errors.Is(err, sql.ErrNoRows) {
		return l, fmt.Errorf("%w: workflow %s (owner %s, token %d)", ledger.ErrLeaseLost, l.Workflow, l.Owner, l.Token)
	}
	if err != nil {
		return l, s.dbErr("renew lease", err)
	}
	return row.lease(), nil
}

// ReleaseLease frees a held lease and, when another host asked for it meanwhile, wakes
// the hosts waiting for the workflow; one statement, its own transaction. A release
// nobody waits for sends nothing: the holder itself listens too, and a wake-up after
// each of its passes would make an idle host run pass after pass instead of once per
// poll interval.
func (s *Store) ReleaseLease(ctx context.Context, l ledger.Lease) (bool, error) {
	if err := s.writable(); err != nil {
		return false, err
	}
	var wanted bool
	err := s.r.GetContext(ctx, &wanted, `WITH r AS (
			UPDATE leases SET owner = '', expires_at = 'epoch', idle_claims = CASE WHEN ? THEN claims ELSE 0 END
			WHERE workflow = ? AND owner = ? AND claims = ?
			RETURNING wanted_at > claimed_at AS wanted)
		SELECT wanted FROM r, LATERAL (SELECT pg_notify('scripthost:' || current_schema(), ?) WHERE wanted) n`,
		l.Idle, l.Workflow, l.Owner, l.Token, l.Workflow)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil // lost already, or nobody asked for it
	}
	if err != nil {
		return false, s.dbErr("release lease", err)
	}
	return wanted, nil
}

// Leases lists every workflow's lease by workflow name.
func (s *Store) Leases(ctx context.Context) ([]ledger.Lease, error) {
	var rows []leaseRow
	if err := s.r.SelectContext(ctx, &rows, `SELECT workflow, owner, claims, expires_at, renewed_at,
		owner <> '' AND wanted_at > claimed_at AS wanted, owner = '' AND claims > 0 AND idle_claims = claims AS idle
		FROM leases ORDER BY workflow`); err != nil {
		return nil, s.dbErr("list leases", err)
	}
	out := make([]ledger.Lease, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.lease())
	}
	return out, nil
}

// notify wakes the hosts listening for workflow when tx commits. The triggers of the
// schema (migrations/0001_init.sql) send the same wake-up for new events, new runs,
// runs made active again and changed workflows.
func notify(ctx context.Context, tx *wtx, workflow string) error {
	_, err := tx.ExecContext(ctx, `SELECT pg_notify('scripthost:' || current_schema(), ?)`, workflow)
	return err
}

// Bounds of the lease history: hosts silent for hostsKept are dropped when a new host
// first claims a lease, and the newest takeoversKept takeovers are kept.
const (
	hostsKept     = 7 * 24 * time.Hour
	takeoversKept = 1000
)

// noteClaim records in the lease history a claim just made in tx, at the claim's time: the host's renewal
// (a host seen for the first time drops the hosts silent for hostsKept) and, when the
// claim took the lease over, the takeover (keeping the newest takeoversKept). It
// writes the host's renewal only when note (see hostNotes.take) or at a takeover, and
// reports whether it did: the host's claims of several workflows at once would
// otherwise queue on its one row.
func (s *Store) noteClaim(ctx context.Context, tx *wtx, row leaseRow, note bool) (noted bool, err error) {
	if row.TakenFrom == "" && !note {
		return false, nil
	}
	var inserted bool
	err = tx.GetContext(ctx, &inserted, `INSERT INTO lease_hosts (owner, first_seen, renewed_at)
		VALUES (?, ?, ?)
		ON CONFLICT (owner) DO UPDATE SET renewed_at = excluded.renewed_at
		RETURNING xmax = 0`, row.Owner, row.RenewedAt, row.RenewedAt)
	if err != nil {
		return false, s.dbErr("claim lease: note host", err)
	}
	if inserted {
		if _, err := tx.ExecContext(ctx, `DELETE FROM lease_hosts
			WHERE renewed_at < clock_timestamp() - ? * interval '1 millisecond'
			AND owner NOT IN (SELECT owner FROM leases)`, hostsKept.Milliseconds()); err != nil {
			return false, s.dbErr("claim lease: drop silent hosts", err)
		}
	}
	if row.TakenFrom == "" {
		return true, nil
	}
	var id int64
	if err := tx.GetContext(ctx, &id, `INSERT INTO lease_takeovers (workflow, from_owner, to_owner, taken_at, renewed_at, claims)
		VALUES (?, ?, ?, ?, ?, ?) RETURNING id`,
		row.Workflow, row.TakenFrom, row.Owner, row.RenewedAt, row.PrevRenewed, row.Token); err != nil {
		return false, s.dbErr("claim lease: note takeover", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM lease_takeovers WHERE id <= ?`, id-takeoversKept); err != nil {
		return false, s.dbErr("claim lease: drop old takeovers", err)
	}
	return true, nil
}

// noteRenewal moves the host's last renewal in the lease history to now, unless a
// claim or renewal of the host's moved it there less than a second ago (another
// process's, this store's being told apart by hostNotes).
func (s *Store) noteRenewal(ctx context.Context, tx *wtx, owner string) error {
	_, err := tx.ExecContext(ctx, `UPDATE lease_hosts SET renewed_at = clock_timestamp()
		WHERE owner = ? AND renewed_at < clock_timestamp() - interval '1 second'`, owner)
	return s.dbErr("renew lease: note host", err)
}

type leaseHostRow struct {
	Owner     string    `db:"owner"`
	FirstSeen time.Time `db:"first_seen"`
	RenewedAt time.Time `db:"renewed_at"`
}

// LeaseHosts lists the hosts that held a lease in the last hostsKept, by owner.
func (s *Store) LeaseHosts(ctx context.Context) ([]ledger.LeaseHost, error) {
	var rows []leaseHostRow
	if err := s.r.SelectContext(ctx, &rows, `SELECT owner, first_seen, renewed_at FROM lease_hosts ORDER BY owner`); err != nil {
		return nil, s.dbErr("list lease hosts", err)
	}
	out := make([]ledger.LeaseHost, 0, len(rows))
	for _, r := range rows {
		out = append(out, ledger.LeaseHost{Owner: r.Owner, FirstSeen: r.FirstSeen.UTC(), RenewedAt: r.RenewedAt.UTC()})
	}
	return out, nil
}

type takeoverRow struct {
	Workflow  string    `db:"workflow"`
	From      string    `db:"from_owner"`
	To        string    `db:"to_owner"`
	At        time.Time `db:"taken_at"`
	RenewedAt time.Time `db:"renewed_at"`
	Token     int64     `db:"claims"`
}

// Takeovers lists the newest takeovers first, at most limit (and at most
// takeoversKept are kept).
func (s *Store) Takeovers(ctx context.Context, limit int) ([]ledger.Takeover, error) {
	if limit <= 0 {
		limit = takeoversKept
	}
	var rows []takeoverRow
	if err := s.r.SelectContext(ctx, &rows, `SELECT workflow, from_owner, to_owner, taken_at, renewed_at, claims
		FROM lease_takeovers ORDER BY id DESC LIMIT ?`, limit); err != nil {
		return nil, s.dbErr("list takeovers", err)
	}
	out := make([]ledger.Takeover, 0, len(rows))
	for _, r := range rows {
		out = append(out, ledger.Takeover{Workflow: r.Workflow, From: r.From, To: r.To, At: r.At.UTC(),
			RenewedAt: r.RenewedAt.UTC(), Token: r.Token})
	}
	return out, nil
}

// hostNoteEvery is how often at most a host's claims write its last renewal in the
// lease history (lease_hosts); its renewals write it at most once a second too.
const hostNoteEvery = time.Second

// hostNotes remembers when this store last wrote each host's renewal in the lease
// history at a claim or renewal, and whether one is writing it.
type hostNotes struct {
	mu      sync.Mutex
	at      map[string]time.Time
	writing map[string]bool
}

// take reports whether a claim or renewal of owner's is to write owner's renewal:
// none did for hostNoteEvery and none is writing it. One that is then writes it until
// done.
func (n *hostNotes) take(owner string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.at == nil {
		n.at, n.writing = map[string]time.Time{}, map[string]bool{}
	}
	if at, ok := n.at[owner]; n.writing[owner] || ok && time.Since(at) < hostNoteEvery {
		return false
	}
	n.writing[owner] = true
	return true
}

// done ends a claim or renewal of owner's that took the note (took), recording that
// it wrote owner's renewal (wrote).
func (n *hostNotes) done(owner string, took, wrote bool) {
	if !took && !wrote {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if took {
		delete(n.writing, owner)
	}
	if wrote {
		n.at[owner] = time.Now()
	}
}

// unfenced takes a write fence off ctx (ledger.WithFence): a lease operation is never
// fenced by a lease, the caller's or another.
func unfenced(ctx context.Context) context.Context {
	return ledger.WithFence(ctx, ledger.Lease{})
}
