package ledger

import (
	"context"
	"errors"
	"time"
)

var (
	// ErrLeaseLost: the lease expired and another host took it, or it was released.
	ErrLeaseLost = errors.New("ledger: lease lost")
	// ErrUnavailable: the database could not be reached (a restart, a network
	// failure); nothing was changed and the same call may succeed later.
	ErrUnavailable = errors.New("ledger: database unavailable")
)

// Lease is one host's right to drive a workflow's runs until ExpiresAt. Token grows
// at every claim of the workflow, so a lease taken over is told apart from the one
// its former holder still believes in.
type Lease struct {
	Workflow  string    `json:"workflow"`
	Owner     string    `json:"owner"`
	Token     int64     `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
	// TookOverFrom names the host whose lease had expired when ClaimLease took it
	// (it died, or could not renew); empty when the lease was free or released.
	TookOverFrom string `json:"took_over_from,omitempty"`
}

// Leaser is implemented by stores that several hosts share (PostgreSQL). A host drives
// a workflow's runs, and schedules its new ones, only while it holds the workflow's
// lease; a lease whose holder died expires and is taken over. Expiry is judged by the
// store's clock, so hosts with skewed clocks agree.
type Leaser interface {
	// ClaimLease takes the workflow's lease for owner for ttl when nobody else holds
	// it (never claimed, released, or expired). It never waits for another host: ok
	// is false when the lease is held by another owner or being claimed right now.
	ClaimLease(ctx context.Context, workflow, owner string, ttl time.Duration) (l Lease, ok bool, err error)
	// RenewLease extends a held lease by ttl from now, or returns ErrLeaseLost.
	RenewLease(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// ReleaseLease gives a held lease up at once and wakes the other hosts; releasing a
	// lease already lost is not an error. wanted reports whether another host tried to
	// claim it while it was held, so that the holder can let it go to that host.
	ReleaseLease(ctx context.Context, l Lease) (wanted bool, err error)
	// Leases lists every workflow's lease, held or not.
	Leases(ctx context.Context) ([]Lease, error)
	// Wakeups returns a channel that receives when work may have arrived for the
	// workflow (events published, a workflow changed, a lease released), sent by
	// other hosts as well as this one, and a function that stops the deliveries. A
	// wake-up may be spurious; several may arrive as one.
	Wakeups(workflow string) (<-chan struct{}, func())
}
