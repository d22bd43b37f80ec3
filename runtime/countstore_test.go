package runtime_test

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// countingStore counts the reads the runtime makes through a ledger.Store.
type countingStore struct {
	ledger.Store
	reads atomic.Int64
}

func (s *countingStore) Workflow(ctx context.Context, name string) (ledger.Workflow, error) {
	s.reads.Add(1)
	return s.Store.Workflow(ctx, name)
}
func (s *countingStore) WorkflowVersion(ctx context.Context, wf string, v int) (ledger.WorkflowVersion, error) {
	s.reads.Add(1)
	return s.Store.WorkflowVersion(ctx, wf, v)
}
func (s *countingStore) PendingEvents(ctx context.Context, wf, topic string, limit int) ([]scripthost.Event, error) {
	s.reads.Add(1)
	return s.Store.PendingEvents(ctx, wf, topic, limit)
}
func (s *countingStore) Events(ctx context.Context, f ledger.EventFilter) ([]scripthost.Event, error) {
	s.reads.Add(1)
	return s.Store.Events(ctx, f)
}
func (s *countingStore) Run(ctx context.Context, id string) (scripthost.Run, error) {
	s.reads.Add(1)
	return s.Store.Run(ctx, id)
}
func (s *countingStore) Runs(ctx context.Context, f ledger.RunFilter) ([]scripthost.Run, error) {
	s.reads.Add(1)
	return s.Store.Runs(ctx, f)
}
func (s *countingStore) Mutation(ctx context.Context, id string) (scripthost.Mutation, error) {
	s.reads.Add(1)
	return s.Store.Mutation(ctx, id)
}
func (s *countingStore) RunMutation(ctx context.Context, runID string) (scripthost.Mutation, error) {
	s.reads.Add(1)
	return s.Store.RunMutation(ctx, runID)
}
func (s *countingStore) Mutations(ctx context.Context, f ledger.MutationFilter) ([]scripthost.Mutation, error) {
	s.reads.Add(1)
	return s.Store.Mutations(ctx, f)
}
func (s *countingStore) DueReconciles(ctx context.Context, now time.Time) ([]scripthost.Mutation, error) {
	s.reads.Add(1)
	return s.Store.DueReconciles(ctx, now)
}
func (s *countingStore) FailureCount(ctx context.Context, inputHash string) (int, error) {
	s.reads.Add(1)
	return s.Store.FailureCount(ctx, inputHash)
}
func (s *countingStore) HandlerState(ctx context.Context, wf, handler string) (ledger.HandlerState, error) {
	s.reads.Add(1)
	return s.Store.HandlerState(ctx, wf, handler)
}
func (s *countingStore) Schedule(ctx context.Context, wf, producer string) (ledger.Schedule, error) {
	s.reads.Add(1)
	return s.Store.Schedule(ctx, wf, producer)
}
