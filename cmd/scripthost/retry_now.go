package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/runtime"
)

// retryNow are retry's flags for --now.
type retryNow struct {
	now       bool
	tools     string
	workspace string
	timeout   time.Duration
}

// set reports whether a flag that goes with --now was given.
func (n retryNow) set(cmd *cobra.Command) bool {
	for _, f := range []string{"tools", "workspace", "timeout"} {
		if cmd.Flags().Changed(f) {
			return true
		}
	}
	return false
}

// retryAndDrive creates the retry of runID and drives it at once, as a run pass would,
// to its commit or its next pause.
func retryAndDrive(ctx context.Context, g *globals, runID string, version int, n retryNow, by, reason string) error {
	ws := n.workspace
	if ws == "" {
		// The workflow's directory, as run defaults to: read it before the host
		// takes the ledger.
		if err := withStore(ctx, g, func(store ledger.Store) error {
			src, err := store.Run(ctx, runID)
			if err != nil {
				return err
			}
			v, err := store.WorkflowVersion(ctx, src.Workflow, version)
			if err != nil {
				return err
			}
			if v.Path != "" {
				ws = filepath.Dir(v.Path)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	h, store, err := buildHost(ctx, g, ws, n.tools, n.timeout, false, nil, defaultReconcile(), 0, runtime.LeaseOptions{TTL: 15 * time.Second}, g.Stdout)
	if err != nil {
		return err
	}
	defer store.Close()
	defer h.Close(context.WithoutCancel(ctx))
	src, r, err := recordRetry(ctx, store, runID, version, by, reason)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.Stdout, "run %s retries %s from %s on version %d; running it now\n", r.ID, src.ID, r.Phase, r.Version)
	end, _, err := h.Runtime().Drive(ctx, r.ID)
	if err != nil {
		return err
	}
	switch {
	case end.Status == scripthost.StatusCommitted || end.Status == scripthost.StatusSkipped:
		fmt.Fprintf(g.Stdout, "run %s %s\n", end.ID, end.Status)
		return nil
	case end.Status == scripthost.StatusActive:
		fmt.Fprintf(g.Stdout, "run %s stopped in %s; the next pass of scripthost run or scripthost serve goes on with it\n", end.ID, end.Phase)
		return nil
	}
	fmt.Fprintf(g.Stdout, "run %s is %s: %s\n", end.ID, end.Status, oneLine(end.Error, 200))
	return onceError{exitBlocked, fmt.Sprintf("run %s is %s again (scripthost show %s)", end.ID, end.Status, end.ID)}
}

// defaultReconcile is the reconcile policy of run's and serve's flag defaults.
func defaultReconcile() hostfuncs.ReconcilePolicy {
	return hostfuncs.ReconcilePolicy{MaxAttempts: 5, BaseDelay: time.Second, MaxDelay: 5 * time.Minute}
}
