package ledger

import "time"

// WriteTimeout bounds a write that must complete even when the caller's context is
// cancelled: a mutation's in-flight record and its outcome, an execution record, an
// agent's turn. It is the stores' default Options.WriteTimeout, and callers that
// detach such a write from their context (context.WithoutCancel) bound it with it.
const WriteTimeout = 30 * time.Second
