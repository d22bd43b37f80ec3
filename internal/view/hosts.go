package view

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/scripthost/scripthost/ledger"
)

// Hosts is which host holds which workflow of a shared ledger, as the leases say, and
// the history the ledger keeps of them: each host's last renewal and the takeovers.
type Hosts struct {
	At time.Time `json:"at"`
	// Shared is false for a ledger that one host owns (SQLite): it has no leases.
	Shared bool   `json:"shared"`
	Hosts  []Host `json:"hosts"`
	// Free are the workflows no host holds now (a host claims a workflow's lease for
	// each pass over it and releases it after).
	Free []FreeLease `json:"free"`
	// Takeovers are the newest takeovers first (at most TakeoversShown): a host claimed
	// a lease another host held until it expired unreleased.
	Takeovers []TakeoverSeen `json:"takeovers"`
}

// TakeoversShown is how many of the newest takeovers the report lists.
const TakeoversShown = 50

// Host states: what a host's leases and history say of it.
const (
	// HostRenewing holds a lease it renews.
	HostRenewing = "renewing"
	// HostStale holds only leases that ran out: it stopped renewing them, and the next
	// host to claim each takes it over (the attention report lists them).
	HostStale = "stale"
	// HostTakenOver holds no lease, and another host took a workflow over from it after
	// its last renewal: it stopped (died, hung, or lost the database).
	HostTakenOver = "taken over"
	// HostIdle holds no lease now; it released its last one after a pass.
	HostIdle = "idle"
)

// Host is one host: the leases it holds and what the ledger's history says of it.
type Host struct {
	Owner  string      `json:"owner"`
	Leases []HeldLease `json:"leases"`
	// Stale is set when every lease the host holds has expired: it stopped renewing
	// them, and the next host to claim each takes it over (serve logs the takeover).
	Stale bool `json:"stale"`
	// State is one of renewing, stale, taken over, idle.
	State string `json:"state"`
	// RenewedAt is the host's last claim or renewal of any lease (zero when the ledger
	// keeps no history); SilentSeconds is how long ago that was.
	RenewedAt     time.Time `json:"renewed_at,omitzero"`
	SilentSeconds int64     `json:"silent_seconds"`
	// FirstSeen is the host's first claim the ledger remembers.
	FirstSeen time.Time `json:"first_seen,omitzero"`
}

// HeldLease is a workflow's lease held by a host.
type HeldLease struct {
	Workflow string `json:"workflow"`
	// Claims counts every claim of the workflow's lease by any host (its token).
	Claims    int64     `json:"claims"`
	ExpiresAt time.Time `json:"expires_at"`
	Expired   bool      `json:"expired"`
	RenewedAt time.Time `json:"renewed_at,omitzero"`
}

// FreeLease is a workflow's lease no host holds.
type FreeLease struct {
	Workflow string `json:"workflow"`
	Claims   int64  `json:"claims"`
}

// TakeoverSeen is a takeover: To claimed Workflow's lease at At from From, whose last
// renewal of it was SilentMS milliseconds before.
type TakeoverSeen struct {
	ledger.Takeover
	SilentMS int64 `json:"silent_ms"`
}

// HostsOf lists the hosts of store at clock() (time.Now when nil): those holding
// leases and, when the store keeps lease history, those that held one, with the
// newest takeovers.
func HostsOf(ctx context.Context, store ledger.Store, clock func() time.Time) (Hosts, error) {
	if clock == nil {
		clock = time.Now
	}
	h := Hosts{At: clock(), Hosts: []Host{}, Free: []FreeLease{}, Takeovers: []TakeoverSeen{}}
	l, ok := store.(ledger.Leaser)
	if !ok {
		return h, nil
	}
	h.Shared = true
	leases, err := l.Leases(ctx)
	if err != nil {
		return h, fmt.Errorf("hosts: leases: %w", err)
	}
	stale := map[string]bool{}
	for _, x := range staleOf(leases, h.At) {
		stale[x.Workflow] = true
	}
	byOwner := map[string]int{}
	host := func(owner string) *Host {
		i, ok := byOwner[owner]
		if !ok {
			i = len(h.Hosts)
			byOwner[owner] = i
			h.Hosts = append(h.Hosts, Host{Owner: owner, Leases: []HeldLease{}})
		}
		return &h.Hosts[i]
	}
	for _, x := range leases {
		if x.Owner == "" {
			h.Free = append(h.Free, FreeLease{Workflow: x.Workflow, Claims: x.Token})
			continue
		}
		o := host(x.Owner)
		o.Leases = append(o.Leases, HeldLease{Workflow: x.Workflow, Claims: x.Token, ExpiresAt: x.ExpiresAt,
			Expired: stale[x.Workflow], RenewedAt: x.RenewedAt})
		if x.RenewedAt.After(o.RenewedAt) {
			o.RenewedAt = x.RenewedAt
		}
	}
	if hist, ok := store.(ledger.LeaseHistory); ok {
		if err := h.addHistory(ctx, hist, host); err != nil {
			return h, err
		}
	}
	for i := range h.Hosts {
		h.Hosts[i].judge(h.At, h.Takeovers)
	}
	slices.SortFunc(h.Hosts, func(a, b Host) int { return cmpString(a.Owner, b.Owner) })
	return h, nil
}

// addHistory adds the hosts the ledger remembers and its newest takeovers.
func (h *Hosts) addHistory(ctx context.Context, hist ledger.LeaseHistory, host func(string) *Host) error {
	known, err := hist.LeaseHosts(ctx)
	if err != nil {
		return fmt.Errorf("hosts: history: %w", err)
	}
	for _, k := range known {
		o := host(k.Owner)
		o.FirstSeen = k.FirstSeen
		if k.RenewedAt.After(o.RenewedAt) {
			o.RenewedAt = k.RenewedAt
		}
	}
	tk, err := hist.Takeovers(ctx, TakeoversShown)
	if err != nil {
		return fmt.Errorf("hosts: takeovers: %w", err)
	}
	for _, x := range tk {
		h.Takeovers = append(h.Takeovers, TakeoverSeen{Takeover: x, SilentMS: max(x.At.Sub(x.RenewedAt).Milliseconds(), 0)})
	}
	return nil
}

// judge sets the host's state from its leases and the takeovers (newest first).
func (o *Host) judge(now time.Time, takeovers []TakeoverSeen) {
	if !o.RenewedAt.IsZero() {
		o.SilentSeconds = seconds(now.Sub(o.RenewedAt))
	}
	expired := 0
	for _, l := range o.Leases {
		if l.Expired {
			expired++
		}
	}
	o.Stale = len(o.Leases) > 0 && expired == len(o.Leases)
	switch {
	case o.Stale:
		o.State = HostStale
	case len(o.Leases) > 0:
		o.State = HostRenewing
	default:
		o.State = HostIdle
		for _, x := range takeovers {
			if x.From == o.Owner && !x.At.Before(o.RenewedAt) {
				o.State = HostTakenOver
				break
			}
		}
	}
}
