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
	// TakenFrom, on a lease ClaimLease returns, names the host that held it until it
	// expired unreleased (a takeover: that host stopped renewing it); empty when the
	// lease was free or released.
	TakenFrom string `json:"taken_from,omitempty"`
	// RenewedAt is when the holder last claimed or renewed the lease (zero when the
	// store does not keep it).
	RenewedAt time.Time `json:"renewed_at,omitzero"`
	// Wanted, on a lease RenewLease or Leases returns, says that another host asked
	// for the held lease since it was claimed (AskLease: a host with no lease of its
	// own waits for it). A hint between hosts, not part of the API's lease listings.
	Wanted bool `json:"-"`
	// Idle, on a lease given to ReleaseLease, says that the holder's last pass under
	// it found nothing to do; on a lease Leases returns, that the lease is free and
	// was last given back so, under the claim Token. A hint between hosts, not part of
	// the API's lease listings.
	Idle bool `json:"-"`
}

// WithFence returns ctx carrying l, a lease its caller holds: a Leaser's store then
// commits the writes made with ctx only while l is still held (the same owner and
// token, unexpired by the store's clock), and refuses them with ErrLeaseLost,
// nothing written, once another host took the workflow over or the lease expired. The
// check is made by the write's own statements: a host that stalled past its lease's
// expiry (a pause, a database outage waited out) cannot write over the work of the
// host that took over. A zero Lease takes a fence off ctx. The Leaser's own lease
// operations are never fenced.
func WithFence(ctx context.Context, l Lease) context.Context {
	return context.WithValue(ctx, fenceKey{}, l)
}

// FenceOf returns the lease WithFence put on ctx.
func FenceOf(ctx context.Context) (Lease, bool) {
	l, ok := ctx.Value(fenceKey{}).(Lease)
	return l, ok && l.Workflow != ""
}

type fenceKey struct{}

// LeaseHost is a host that held a lease of the ledger.
type LeaseHost struct {
	Owner string `json:"owner"`
	// FirstSeen is its first claim; RenewedAt its last claim or renewal of any lease.
	FirstSeen time.Time `json:"first_seen"`
	RenewedAt time.Time `json:"renewed_at"`
}

// Takeover is a host claiming a lease another host held until it expired unreleased.
type Takeover struct {
	Workflow string `json:"workflow"`
	// From stopped renewing the lease; To took it over at At.
	From string    `json:"from"`
	To   string    `json:"to"`
	At   time.Time `json:"at"`
	// RenewedAt is when From last claimed or renewed the lease.
	RenewedAt time.Time `json:"renewed_at"`
	// Token is the lease's claim count after the takeover.
	Token int64 `json:"token"`
}

// LeaseHistory is implemented by shared stores that keep their leases' history
// (PostgreSQL): the hosts that held leases and the takeovers between them, bounded by
// the store (see its docs).
type LeaseHistory interface {
	// LeaseHosts lists the hosts that held a lease, by owner.
	LeaseHosts(ctx context.Context) ([]LeaseHost, error)
	// Takeovers lists the newest takeovers first, at most limit of them.
	Takeovers(ctx context.Context, limit int) ([]Takeover, error)
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
	// AskLease tells the host holding the workflow's lease that owner waits for it:
	// the holder sees Lease.Wanted at its next renewal and in Leases, and
	// ReleaseLease reports it. Nothing is written when the lease is free, owner's, or
	// already asked for since it was claimed. It never waits for another host.
	AskLease(ctx context.Context, workflow, owner string) error
	// RenewLease extends a held lease by ttl from now, or returns ErrLeaseLost.
	RenewLease(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// ReleaseLease gives a held lease up at once and wakes the other hosts; releasing a
	// lease already lost is not an error. wanted reports whether another host asked
	// for it while it was held (AskLease), so that the holder can let it go to that
	// host. The
	// store keeps l.Idle for Leases to report until the lease is claimed again.
	ReleaseLease(ctx context.Context, l Lease) (wanted bool, err error)
	// Leases lists every workflow's lease, held or not.
	Leases(ctx context.Context) ([]Lease, error)
	// Wakeups returns a channel that receives when work may have arrived for the
	// workflow (events published, a workflow changed, a lease released), sent by
	// other hosts as well as this one, and a function that stops the deliveries. A
	// wake-up may be spurious; several may arrive as one.
	Wakeups(workflow string) (<-chan struct{}, func())
}
