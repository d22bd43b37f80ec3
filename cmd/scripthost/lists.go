package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/scripthost/scripthost/internal/view"
	"github.com/scripthost/scripthost/ledger"
)

// pageFlags are the paging and search flags of every listing.
type pageFlags struct {
	limit  int
	cursor string
	search string
}

func (p *pageFlags) add(cmd *cobra.Command) {
	cmd.Flags().IntVar(&p.limit, "limit", 0, "only the newest N (0: all); with more, the next page's cursor goes to stderr")
	cmd.Flags().StringVar(&p.cursor, "cursor", "", "continue after the page that printed this cursor")
	cmd.Flags().StringVarP(&p.search, "search", "q", "", "only items whose ids, names, status or error contain this text (any case)")
}

// list is the listing the flags ask for, refusing a negative limit or a cursor no
// listing printed.
func (p pageFlags) list() (view.List, error) {
	if p.limit < 0 {
		return view.List{}, usagef("--limit %d: want 0 (all) or more", p.limit)
	}
	if p.cursor != "" {
		if _, err := view.DecodeCursor(p.cursor); err != nil {
			return view.List{}, usagef("--cursor %q: %v", p.cursor, err)
		}
	}
	return view.List{Limit: p.limit, Cursor: p.cursor, Search: p.search}, nil
}

// printNext tells on stderr how to get the next page, when there is one.
func printNext(g *globals, next string) {
	if next != "" {
		fmt.Fprintf(g.Stderr, "more: add --cursor %s for the next, older page\n", next)
	}
}

// topicsCmd lists every topic's totals and backlog (view.Topics), as GET
// /api/v1/topics answers them.
func topicsCmd(g *globals) *cobra.Command {
	var asJSON bool
	var workflow string
	cmd := &cobra.Command{
		Use:   "topics",
		Short: "List topics: events pending, reserved, consumed and skipped, and the oldest pending one's age (the backlog)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd.Context(), g, func(store ledger.Store) error {
				ts, err := view.Topics(cmd.Context(), store, workflow, time.Now())
				if err != nil {
					return err
				}
				return list(g, asJSON, ts, "WORKFLOW\tTOPIC\tPENDING\tRESERVED\tCONSUMED\tSKIPPED\tBACKLOG", func(t view.Topic) []string {
					backlog := "-"
					if t.Pending > 0 {
						backlog = (time.Duration(t.BacklogSeconds) * time.Second).String()
					}
					return []string{t.Workflow, t.Topic, fmt.Sprint(t.Pending), fmt.Sprint(t.Reserved), fmt.Sprint(t.Consumed),
						fmt.Sprint(t.Skipped), backlog}
				})
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	cmd.Flags().StringVar(&workflow, "workflow", "", "only this workflow")
	return cmd
}
