package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/scripthost/scripthost/internal/document"
	"github.com/scripthost/scripthost/internal/view"
	"github.com/scripthost/scripthost/ledger"
)

func init() { commands = append(commands, newPublishCmd) }

func newPublishCmd(g *globals) *cobra.Command {
	var id, payload, by string
	cmd := &cobra.Command{
		Use:   "publish WORKFLOW TOPIC --id ID --payload JSON|@FILE",
		Short: "Publish an event from outside any run on one of a workflow's topics",
		Long: `Publish an event on a topic the workflow declares (in its newest stored version),
for its consumers to take up at the next run or serve pass. --payload is JSON, or
@FILE to read it from a file (an error names FILE:LINE:COLUMN).

Publishing is idempotent by --id: the same id with the same payload stores nothing
more and says so; another payload under an id the topic already has is refused. The
publication is recorded as an operator action (GET /api/v1/actions lists it).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if strings.TrimSpace(id) == "" {
				return usagef("--id is required and must not be empty: it makes a second publication of the event a no-op")
			}
			body, err := readPayload(payload)
			if err != nil {
				return err
			}
			workflow, topic := args[0], args[1]
			return withStore(ctx, g, func(store ledger.Store) error {
				req := map[string]any{"workflow": workflow, "topic": topic, "id": id, "payload": body}
				res, err := recordCLI(ctx, store, "publish", workflow+"/"+topic+"/"+id, by, req, func(ctx context.Context) (any, error) {
					return view.Publish(ctx, store, store.Publish, workflow, topic, id, body)
				})
				if err != nil {
					return eventError(err)
				}
				p := res.(view.Published)
				if p.Duplicate {
					fmt.Fprintf(g.Stdout, "event %s/%s/%s was published already (seq %d, %s): nothing stored\n",
						workflow, topic, id, p.Event.Seq, p.Event.Status)
					return nil
				}
				fmt.Fprintf(g.Stdout, "published event %s/%s/%s (seq %d); the next run or serve pass of %s takes it up\n",
					workflow, topic, id, p.Event.Seq, workflow)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "the event's message id (publishing it again is a no-op)")
	cmd.Flags().StringVar(&payload, "payload", "", "the payload as JSON, or @FILE")
	cmd.Flags().StringVar(&by, "by", "", "who publishes, for the audit trail (default: the current user)")
	_ = cmd.MarkFlagRequired("id")
	_ = cmd.MarkFlagRequired("payload")
	return cmd
}

// readPayload reads --payload: JSON, or @FILE. Invalid JSON is a usage error naming
// where it goes wrong (FILE:LINE:COLUMN for a file).
func readPayload(arg string) (json.RawMessage, error) {
	name, data := "--payload", []byte(arg)
	if path, ok := strings.CutPrefix(arg, "@"); ok {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, usagef("--payload @%s: %v", path, errors.Unwrap(err))
		}
		name, data = path, b
	}
	var v any
	if err := document.JSON(name, data, &v); err != nil {
		if !strings.HasPrefix(err.Error(), name) {
			return nil, usagef("%s: %v", name, err)
		}
		return nil, usageError{err: err}
	}
	return json.RawMessage(strings.TrimSpace(string(data))), nil
}

func newEventsSkipCmd(g *globals) *cobra.Command {
	var reason, by string
	cmd := &cobra.Command{
		Use:   "skip WORKFLOW TOPIC ID [--reason TEXT]",
		Short: "Set a poison event aside so that its handler proceeds with the next event",
		Long: `Set a pending event aside: its status becomes skipped (it stays listed: scripthost
events --status skipped), so no run peeks at or reserves it again. Each consumer of the
topic whose newest run failed or paused on the event (scripthost show RUN lists the
events a run reserved or peeked at) gets a retry of that run, which prepares again
without the event; the next run or serve pass picks it up. An event a run holds is
refused: retry or resolve that run. The skip is recorded as an operator action with
--reason.`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			workflow, topic, id := args[0], args[1], args[2]
			return withStore(ctx, g, func(store ledger.Store) error {
				req := map[string]any{"workflow": workflow, "topic": topic, "id": id, "reason": reason}
				res, err := recordCLI(ctx, store, "skip_event", workflow+"/"+topic+"/"+id, by, req, func(ctx context.Context) (any, error) {
					return view.SkipEvent(ctx, store, workflow, topic, id)
				})
				if err != nil {
					return eventError(err)
				}
				s := res.(view.Skipped)
				if s.Already {
					fmt.Fprintf(g.Stdout, "event %s/%s/%s was skipped already\n", workflow, topic, id)
				} else {
					fmt.Fprintf(g.Stdout, "event %s/%s/%s skipped\n", workflow, topic, id)
				}
				for _, r := range s.Retried {
					fmt.Fprintf(g.Stdout, "handler %s: run %s retries %s without the event; the next run or serve pass picks it up\n",
						r.Retry.Handler, r.Retry.ID, r.Source.ID)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the event is set aside, for the audit trail")
	cmd.Flags().StringVar(&by, "by", "", "who skips, for the audit trail (default: the current user)")
	return cmd
}

// recordCLI runs an operator action of the CLI and records it, done or refused, in the
// audit trail scripthost serve's actions use (view.RecordAction).
func recordCLI(ctx context.Context, store ledger.Store, name, target, by string, req any,
	do func(ctx context.Context) (any, error)) (any, error) {
	by = approver(by)
	started := time.Now()
	res, err := do(ctx)
	rerr := view.RecordAction(ctx, store, view.Action{Name: name, Target: target, By: by, Request: req,
		Result: res, Err: err, Started: started, Ended: time.Now()})
	if err != nil {
		return nil, err
	}
	if rerr != nil {
		return res, fmt.Errorf("%s %s done, but recording it in the audit trail failed: %w", name, target, rerr)
	}
	return res, nil
}

// refusedError is an error that exits with exitRefused.
type refusedError struct{ error }

func (e refusedError) Unwrap() error { return e.error }
func (refusedError) ExitCode() int   { return exitRefused }

// eventError gives a refused publication or skip its exit code: a bad request is a
// usage error, an id taken by another payload is refused.
func eventError(err error) error {
	switch {
	case errors.Is(err, view.ErrBadEvent):
		return usageError{err: err}
	case errors.Is(err, view.ErrEventConflict):
		return refusedError{err}
	}
	return err
}
