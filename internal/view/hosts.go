package view

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/scripthost/scripthost/ledger"
)

// Hosts is which host holds which workflow of a shared ledger, as the leases say.
type Hosts struct {
	At time.Time `json:"at"`
	// Shared is false for a ledger that one host owns (SQLite): it has no leases.
	Shared bool   `json:"shared"`
	Hosts  []Host `json:"hosts"`
	// Free are the workflows no host holds now (a host claims a workflow's lease for
	// each pass over it and releases it after).
	Free []FreeLease `json:"free"`
}

// Host is one host and the leases it holds.
type Host struct {
	Owner  string      `json:"owner"`
	Leases []HeldLease `json:"leases"`
	// Stale is set when every lease the host holds has expired: it stopped renewing
	// them, and the next host to claim each takes it over (serve logs the takeover).
	Stale bool `json:"stale"`
}

// HeldLease is a workflow's lease held by a host.
type HeldLease struct {
	Workflow string `json:"workflow"`
	// Claims counts every claim of the workflow's lease by any host (its token).
	Claims    int64     `json:"claims"`
	ExpiresAt time.Time `json:"expires_at"`
	Expired   bool      `json:"expired"`
}

// FreeLease is a workflow's lease no host holds.
type FreeLease struct {
	Workflow string `json:"workflow"`
	Claims   int64  `json:"claims"`
}

// HostsOf lists the hosts holding the leases of store at clock() (time.Now when nil).
func HostsOf(ctx context.Context, store ledger.Store, clock func() time.Time) (Hosts, error) {
	if clock == nil {
		clock = time.Now
	}
	h := Hosts{At: clock(), Hosts: []Host{}, Free: []FreeLease{}}
	l, ok := store.(ledger.Leaser)
	if !ok {
		return h, nil
	}
	h.Shared = true
	leases, err := l.Leases(ctx)
	if err != nil {
		return h, fmt.Errorf("hosts: leases: %w", err)
	}
	byOwner := map[string]int{}
	for _, x := range leases {
		if x.Owner == "" {
			h.Free = append(h.Free, FreeLease{Workflow: x.Workflow, Claims: x.Token})
			continue
		}
		i, ok := byOwner[x.Owner]
		if !ok {
			i = len(h.Hosts)
			byOwner[x.Owner] = i
			h.Hosts = append(h.Hosts, Host{Owner: x.Owner, Leases: []HeldLease{}, Stale: true})
		}
		expired := x.ExpiresAt.Before(h.At)
		h.Hosts[i].Leases = append(h.Hosts[i].Leases, HeldLease{Workflow: x.Workflow, Claims: x.Token, ExpiresAt: x.ExpiresAt, Expired: expired})
		h.Hosts[i].Stale = h.Hosts[i].Stale && expired
	}
	slices.SortFunc(h.Hosts, func(a, b Host) int { return cmpString(a.Owner, b.Owner) })
	return h, nil
}
