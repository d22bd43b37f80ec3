package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
)

// checkCallsFitLease refuses, on a shared (leased) ledger, a mutating tool whose calls
// may last as long as the lease TTL or longer. A host that takes a workflow over from
// one that died reconciles the dead host's in-flight mutation once it is older than
// the TTL; a call still running at the service then could be answered "not found"
// and made a second time. Read-only tools and tools of unknown timeout pass.
func checkCallsFitLease(store ledger.Store, ttl time.Duration, tools []*hostfuncs.Tool) error {
	if _, shared := store.(ledger.Leaser); !shared {
		return nil
	}
	for _, t := range tools {
		if t.Timeout <= 0 || t.Classify(json.RawMessage(`{}`)) == scripthost.OpRead {
			continue
		}
		if t.Timeout >= ttl {
			return fmt.Errorf("tool %s: timeout %v is at or above the lease TTL %v of the shared ledger: a host that takes "+
				"the workflow over after this one dies could reconcile a call the service is still working on, and make it twice; "+
				"give the tool a timeout below the TTL, or raise --lease-ttl above %v", t.Name(), t.Timeout, ttl, t.Timeout)
		}
	}
	return nil
}
