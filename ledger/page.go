package ledger

import "time"

// PageKey is a position in a listing ordered newest first by (time, id): the page
// after it holds the rows that order after it, the older ones. Rows stored later
// order before every key handed out earlier, so they do not shift the pages that
// follow. For events ID is the event's sequence number in decimal.
type PageKey struct {
	At time.Time
	ID string
}

// Page selects one page of a newest-first listing, for the filters that carry one.
type Page struct {
	// After, when set, starts the page after this key; nil starts at the newest row.
	After *PageKey
}

// TopicStats sums up one topic of one workflow: how many of its events are in each
// status, and the oldest pending one (its backlog's age).
type TopicStats struct {
	Workflow string `json:"workflow"`
	Topic    string `json:"topic"`
	Pending  int    `json:"pending"`
	Reserved int    `json:"reserved"`
	Consumed int    `json:"consumed"`
	Skipped  int    `json:"skipped"`
	// OldestPending is when the oldest pending event was published (zero: none is).
	OldestPending time.Time `json:"oldest_pending,omitzero"`
	// Last is when the newest event was published.
	Last time.Time `json:"last"`
}

// ExecutionSummary sums up one execution in the execution log (the records whose
// execution id is ExecutionID or ExecutionID/STEP): how many step records it has, how
// many failed, and when its first step started and its last ended.
type ExecutionSummary struct {
	ExecutionID string
	PlanID      string
	Steps       int
	Failed      int
	StartedAt   time.Time
	EndedAt     time.Time
}

// ExecutionSummaryFilter selects execution summaries; zero fields match everything.
type ExecutionSummaryFilter struct {
	PlanID string
	// ExcludePlan leaves out the executions of this plan id (the operator audit trail).
	ExcludePlan string
	// Search selects executions whose id or plan id, or one of whose steps' id, tool,
	// error or error code, contains it (ignoring case).
	Search string
	// Page starts after Page.After (summaries are listed newest first by (started_at,
	// execution id)); Limit keeps that many (0: all).
	Page  *Page
	Limit int
}
