package sqlstore

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// reader is the store's Reader, through which every read outside a transaction goes.
// It tells lookups from lists: a lookup reads one row found through a key or an index
// (GetContext, and the QueryRowxContext under sqlx.GetContext), or at most a limit's
// rows where an index starts at them (selectLookup); a list (SelectContext,
// QueryxContext) reads any number of rows and may scan a table.
//
// With LocalReads a lookup runs with its caller's context's values but not its
// cancellation, once the context is checked: database/sql watches every query whose
// context can be cancelled on a goroutine of its own, which costs a local lookup
// more than its statement does. A lookup whose caller has already given up still
// fails at once with the context's error. Lists keep their caller's context, so that
// the driver interrupts a long one when its caller gives up.
type reader struct {
	Reader
	local bool
}

// lookupContext is the context a lookup runs with. A context already done is kept:
// the query then fails with its error before it runs.
func (r *reader) lookupContext(ctx context.Context) context.Context {
	if r.local && ctx.Err() == nil {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

func (r *reader) QueryRowxContext(ctx context.Context, query string, args ...any) *sqlx.Row {
	return r.Reader.QueryRowxContext(r.lookupContext(ctx), query, args...)
}

func (r *reader) GetContext(ctx context.Context, dest any, query string, args ...any) error {
	return sqlx.GetContext(ctx, r, dest, query, args...)
}

func (r *reader) SelectContext(ctx context.Context, dest any, query string, args ...any) error {
	return sqlx.SelectContext(ctx, r, dest, query, args...)
}

// selectLookup is SelectContext for a list that is a lookup: at most a limit's rows,
// which an index on the query's equality conditions starts at.
func (r *reader) selectLookup(ctx context.Context, dest any, query string, args ...any) error {
	return sqlx.SelectContext(r.lookupContext(ctx), r.Reader, dest, query, args...)
}
