package benchrun

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// CountingStore counts the reads the runtime makes through a ledger.Store.
type CountingStore struct {
	ledger.Store
	Reads atomic.Int64
}

func (s *CountingStore) Workflow(ctx context.Context, name string) (ledger.Workflow, error) {
	s.Reads.Add(1)
	return s.Store.Workflow(ctx, name)
}
func (s *CountingStore) WorkflowVersion(ctx context.Context, wf string, v int) (ledger.WorkflowVersion, error) {
	s.Reads.Add(1)
	return s.Store.WorkflowVersion(ctx, wf, v)
}
func (s *CountingStore) PendingEvents(ctx context.Context, wf, topic string, limit int) ([]scripthost.Event, error) {
	s.Reads.Add(1)
	return s.Store.PendingEvents(ctx, wf, topic, limit)
}
func (s *CountingStore) Events(ctx context.Context, f ledger.EventFilter) ([]scripthost.Event, error) {
	s.Reads.Add(1)
	return s.Store.Events(ctx, f)
}
func (s *CountingStore) Run(ctx context.Context, id string) (scripthost.Run, error) {
	s.Reads.Add(1)
	return s.Store.Run(ctx, id)
}
func (s *CountingStore) Runs(ctx context.Context, f ledger.RunFilter) ([]scripthost.Run, error) {
	s.Reads.Add(1)
	return s.Store.Runs(ctx, f)
}
func (s *CountingStore) Mutation(ctx context.Context, id string) (scripthost.Mutation, error) {
	s.Reads.Add(1)
	return s.Store.Mutation(ctx, id)
}
func (s *CountingStore) RunMutation(ctx context.Context, runID string) (scripthost.Mutation, error) {
	s.Reads.Add(1)
	return s.Store.RunMutation(ctx, runID)
}
func (s *CountingStore) Mutations(ctx context.Context, f ledger.MutationFilter) ([]scripthost.Mutation, error) {
	s.Reads.Add(1)
	return s.Store.Mutations(ctx, f)
}
func (s *CountingStore) DueReconciles(ctx context.Context, now time.Time) ([]scripthost.Mutation, error) {
	s.Reads.Add(1)
	return s.Store.DueReconciles(ctx, now)
}
func (s *CountingStore) FailureCount(ctx context.Context, inputHash string) (int, error) {
	s.Reads.Add(1)
	return s.Store.FailureCount(ctx, inputHash)
}
func (s *CountingStore) HandlerState(ctx context.Context, wf, handler string) (ledger.HandlerState, error) {
	s.Reads.Add(1)
	return s.Store.HandlerState(ctx, wf, handler)
}
func (s *CountingStore) Schedule(ctx context.Context, wf, producer string) (ledger.Schedule, error) {
	s.Reads.Add(1)
	return s.Store.Schedule(ctx, wf, producer)
}
