package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/internal/view"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/plan"
	"github.com/scripthost/scripthost/runtime"
)

// route is one API endpoint; docs/openapi.yaml documents each (a test checks).
type route struct {
	Method, Path string
	handle       handlerFunc
}

func routes(s *Server) []route {
	return []route{
		{"GET", "/api/v1/workflows", s.workflows},
		{"POST", "/api/v1/workflows/{name}/pause", s.pause(true)},
		{"POST", "/api/v1/workflows/{name}/resume", s.pause(false)},
		{"GET", "/api/v1/runs", s.runs},
		{"GET", "/api/v1/runs/{id}", s.run},
		{"GET", "/api/v1/runs/{id}/events", s.runEvents},
		{"POST", "/api/v1/runs/{id}/retry", s.retry},
		{"POST", "/api/v1/runs/{id}/cancel", s.cancel},
		{"GET", "/api/v1/mutations", s.mutations},
		{"GET", "/api/v1/mutations/indeterminate", s.indeterminate},
		{"GET", "/api/v1/mutations/{id}", s.mutation},
		{"POST", "/api/v1/mutations/{id}/resolve", s.resolve},
		{"GET", "/api/v1/events", s.events},
		{"POST", "/api/v1/events", s.publish},
		{"POST", "/api/v1/events/skip", s.skipEvent},
		{"GET", "/api/v1/topics", s.topics},
		{"POST", "/api/v1/bulk/{action}", s.bulk},
		{"GET", "/api/v1/executions", s.executions},
		{"GET", "/api/v1/executions/{plan}/{n}", s.execution},
		{"GET", "/api/v1/agent/sessions", s.agentSessions},
		{"GET", "/api/v1/agent/sessions/{id}", s.agentSession},
		{"POST", "/api/v1/agent/sessions/{id}/approve", s.decide(true)},
		{"POST", "/api/v1/agent/sessions/{id}/deny", s.decide(false)},
		{"GET", "/api/v1/actions", s.actions},
		{"GET", "/api/v1/attention", s.attention},
		{"GET", "/api/v1/overview", s.overview},
		{"GET", "/api/v1/hosts", s.hosts},
	}
}

// workflow is a workflow with its versions, handlers and schedules.
type workflow struct {
	ledger.Workflow
	Versions  []version         `json:"versions"`
	Handlers  []handler         `json:"handlers"`
	Schedules []ledger.Schedule `json:"schedules"`
}

type version struct {
	Version   int       `json:"version"`
	Language  string    `json:"language"`
	Path      string    `json:"path"`
	Hash      string    `json:"hash"`
	CreatedAt time.Time `json:"created_at"`
}

type handler struct {
	Name      string                 `json:"name"`
	Kind      scripthost.HandlerKind `json:"kind"`
	Schedule  string                 `json:"schedule,omitempty"`
	Subscribe []string               `json:"subscribe,omitempty"`
	Publishes []string               `json:"publishes,omitempty"`
}

func (s *Server) workflows(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	wfs, err := s.cfg.Store.Workflows(ctx)
	if err != nil {
		return err
	}
	out := make([]workflow, 0, len(wfs))
	for _, wf := range wfs {
		o := workflow{Workflow: wf, Versions: []version{}, Handlers: []handler{}, Schedules: []ledger.Schedule{}}
		for n := wf.LatestVersion; n >= 1; n-- {
			v, err := s.cfg.Store.WorkflowVersion(ctx, wf.Name, n)
			if errors.Is(err, ledger.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			o.Versions = append(o.Versions, version{v.Version, v.Language, v.Path, v.Hash, v.CreatedAt})
			if n != wf.LatestVersion {
				continue
			}
			def, err := runtime.ParseDefinition(v.Definition)
			if err != nil {
				return fmt.Errorf("serve: workflow %s version %d: %w", wf.Name, n, err)
			}
			for _, name := range slices.Sorted(maps.Keys(def.Producers)) {
				p := def.Producers[name]
				o.Handlers = append(o.Handlers, handler{Name: name, Kind: scripthost.KindProducer, Schedule: p.Schedule.String(), Publishes: p.Publishes})
				sch, err := s.cfg.Store.Schedule(ctx, wf.Name, name)
				if err == nil {
					o.Schedules = append(o.Schedules, sch)
				} else if !errors.Is(err, ledger.ErrNotFound) {
					return err
				}
			}
			for _, name := range slices.Sorted(maps.Keys(def.Consumers)) {
				c := def.Consumers[name]
				o.Handlers = append(o.Handlers, handler{Name: name, Kind: scripthost.KindConsumer, Subscribe: c.Subscribe, Publishes: c.Publishes})
			}
		}
		out = append(out, o)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// query reads the listing parameters every list endpoint shares.
type query struct{ r *http.Request }

func (q query) str(name string) string { return strings.TrimSpace(q.r.URL.Query().Get(name)) }

func (q query) limit() (int, error) {
	v := q.str("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, badf("limit=%q: want a number of items, 0 or more", v)
	}
	return n, nil
}

func (q query) time(name string) (time.Time, error) {
	v := q.str(name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return t, badf("%s=%q: want an RFC 3339 time (2006-01-02T15:04:05Z)", name, v)
	}
	return t, nil
}

func (s *Server) runs(w http.ResponseWriter, r *http.Request) error {
	q := query{r}
	f := ledger.RunFilter{Workflow: q.str("workflow"), Handler: q.str("handler"), Status: scripthost.RunStatus(q.str("status")),
		Phase: scripthost.RunPhase(q.str("phase"))}
	if f.Status == scripthost.StatusSuperseded {
		f.Status, f.Superseded = "", true
	}
	if f.Status != "" && !f.Status.Valid() {
		return badf("status=%q: not a run status (or superseded)", f.Status)
	}
	var err error
	if f.Since, err = q.time("since"); err != nil {
		return err
	}
	if f.Until, err = q.time("until"); err != nil {
		return err
	}
	l, err := q.list()
	if err != nil {
		return err
	}
	if !l.Paged() {
		runs, err := view.Runs(r.Context(), s.cfg.Store, f)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, runs)
		return nil
	}
	pg, err := view.RunsPage(r.Context(), s.cfg.Store, f, l)
	if err != nil {
		return err
	}
	writePage(w, r, pg)
	return nil
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) error {
	d, err := view.Detail(r.Context(), s.cfg.Store, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	run, err := s.cfg.Store.Run(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	evs, err := s.cfg.Store.LifecycleEvents(ctx, ledger.LifecycleFilter{RunID: run.ID})
	if err != nil {
		return err
	}
	out := make([]view.EventLine, 0, len(evs))
	for _, ev := range evs {
		out = append(out, view.LineOf(ev, run))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) mutationList(w http.ResponseWriter, r *http.Request, status scripthost.MutationStatus) error {
	q := query{r}
	l, err := q.list()
	if err != nil {
		return err
	}
	f := ledger.MutationFilter{RunID: q.str("run"), Workflow: q.str("workflow"), Status: status}
	if !l.Paged() {
		ms, err := view.Mutations(r.Context(), s.cfg.Store, f)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, ms)
		return nil
	}
	pg, err := view.MutationsPage(r.Context(), s.cfg.Store, f, l)
	if err != nil {
		return err
	}
	writePage(w, r, pg)
	return nil
}

func (s *Server) mutations(w http.ResponseWriter, r *http.Request) error {
	status := scripthost.MutationStatus(query{r}.str("status"))
	switch status {
	case "", scripthost.MutationInFlight, scripthost.MutationApplied, scripthost.MutationFailed,
		scripthost.MutationNeedsReconcile, scripthost.MutationIndeterminate, scripthost.MutationSkipped:
	default:
		return badf("status=%q: want in_flight, applied, failed, needs_reconcile, indeterminate or skipped", status)
	}
	return s.mutationList(w, r, status)
}

func (s *Server) indeterminate(w http.ResponseWriter, r *http.Request) error {
	return s.mutationList(w, r, scripthost.MutationIndeterminate)
}

func (s *Server) mutation(w http.ResponseWriter, r *http.Request) error {
	m, err := s.cfg.Store.Mutation(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, view.OfMutation(m))
	return nil
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) error {
	q := query{r}
	l, err := q.list()
	if err != nil {
		return err
	}
	f := ledger.EventFilter{Workflow: q.str("workflow"), Topic: q.str("topic"), Status: scripthost.EventStatus(q.str("status"))}
	switch f.Status {
	case "", scripthost.EventPending, scripthost.EventReserved, scripthost.EventConsumed, scripthost.EventSkipped:
	default:
		return badf("status=%q: want pending, reserved, consumed or skipped", f.Status)
	}
	if !l.Paged() {
		evs, err := view.Events(r.Context(), s.cfg.Store, f)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, evs)
		return nil
	}
	pg, err := view.EventsPage(r.Context(), s.cfg.Store, f, l)
	if err != nil {
		return err
	}
	writePage(w, r, pg)
	return nil
}

// execution sums up one execution of a plan.
type execution struct {
	ID        string    `json:"id"`
	PlanID    string    `json:"plan_id"`
	N         int       `json:"n"`
	Steps     int       `json:"steps"`
	Failed    int       `json:"failed"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
}

// executions lists the plan executions (the ledger's ExecutionSummaries, without the
// operator audit trail): all of them oldest first, or one page with limit, cursor or q.
func (s *Server) executions(w http.ResponseWriter, r *http.Request) error {
	l, err := query{r}.list()
	if err != nil {
		return err
	}
	f := ledger.ExecutionSummaryFilter{PlanID: query{r}.str("plan"), ExcludePlan: auditPlan}
	pg, err := view.ExecutionsPage(r.Context(), s.cfg.Store, f, l)
	if err != nil {
		return err
	}
	out := make([]execution, 0, len(pg.Items))
	for _, e := range pg.Items {
		planID, n, _, err := plan.ParseExecutionID(e.ExecutionID)
		if err != nil {
			continue
		}
		out = append(out, execution{ID: e.ExecutionID, PlanID: planID, N: n, Steps: e.Steps, Failed: e.Failed,
			StartedAt: e.StartedAt, EndedAt: e.EndedAt})
	}
	if !l.Paged() {
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	writePage(w, r, view.Page[execution]{Items: out, Next: pg.Next})
	return nil
}

func (s *Server) execution(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("plan") + "/" + r.PathValue("n")
	if _, _, _, err := plan.ParseExecutionID(id); err != nil {
		return badRequest{err}
	}
	recs, err := plan.Records(r.Context(), s.cfg.Store, id)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return fmt.Errorf("serve: no execution records for %s: %w", id, ledger.ErrNotFound)
	}
	writeJSON(w, http.StatusOK, recs)
	return nil
}

// decode reads a JSON request body into v; an empty body leaves v as it is.
func decode(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return badf("reading the body: %v", err)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badf("body: %v", err)
	}
	return nil
}

func (s *Server) pause(pause bool) handlerFunc {
	action := "pause"
	if !pause {
		action = "resume"
	}
	return func(w http.ResponseWriter, r *http.Request) error {
		var body struct {
			By string `json:"by"`
		}
		if err := decode(r, &body); err != nil {
			return err
		}
		name := r.PathValue("name")
		return s.act(w, r, action, name, body.By, nil, func(ctx context.Context) (any, error) {
			if err := s.cfg.Store.SetWorkflowPaused(ctx, name, pause); err != nil {
				return nil, err
			}
			if !pause {
				s.wake(name)
			}
			return s.cfg.Store.Workflow(ctx, name)
		})
	}
}

// retried is the answer to a retry: the run retried and its retry.
type retried struct {
	Source scripthost.Run `json:"source"`
	Retry  scripthost.Run `json:"retry"`
}

func (s *Server) retry(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Version int    `json:"version"`
		By      string `json:"by"`
		Reason  string `json:"reason,omitempty"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	if body.Version < 0 {
		return badf("version %d: want a stored version number (0: the newest)", body.Version)
	}
	id := r.PathValue("id")
	return s.act(w, r, "retry", id, body.By, body, func(ctx context.Context) (any, error) {
		src, next, err := view.Retry(ctx, s.cfg.Store, id, body.Version)
		if err != nil {
			return nil, err
		}
		s.wake(next.Workflow)
		return retried{Source: src, Retry: next}, nil
	})
}

func (s *Server) resolve(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		As     scripthost.MutationStatus `json:"as"`
		Result json.RawMessage           `json:"result,omitempty"`
		Force  bool                      `json:"force"`
		By     string                    `json:"by"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	switch body.As {
	case scripthost.MutationApplied, scripthost.MutationFailed, scripthost.MutationSkipped:
	default:
		return badf("as=%q: want applied, failed or skipped", body.As)
	}
	if len(body.Result) > 0 && string(body.Result) != "null" && body.As != scripthost.MutationApplied {
		return badf("result goes with as=applied")
	}
	id := r.PathValue("id")
	by := operator(body.By)
	return s.act(w, r, "resolve", id, by, body, func(ctx context.Context) (any, error) {
		m, err := hostfuncs.Resolve(ctx, s.cfg.Store, id, ledger.Resolution{As: body.As, Result: body.Result, By: by, Force: body.Force})
		if err != nil {
			return nil, err
		}
		s.wake(m.Workflow)
		return view.OfMutation(m), nil
	})
}

func (s *Server) wake(workflow string) {
	if s.cfg.Wake != nil && workflow != "" {
		s.cfg.Wake(workflow)
	}
}

func (s *Server) publish(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Workflow string          `json:"workflow"`
		Topic    string          `json:"topic"`
		ID       string          `json:"id"`
		Payload  json.RawMessage `json:"payload"`
		By       string          `json:"by"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	if body.Workflow == "" || body.Topic == "" {
		return badf("workflow and topic are required")
	}
	if len(body.Payload) == 0 {
		return badf("payload is required (JSON; null for none)")
	}
	target := body.Workflow + "/" + body.Topic + "/" + body.ID
	return s.act(w, r, "publish", target, body.By, body, func(ctx context.Context) (any, error) {
		return view.Publish(ctx, s.cfg.Store, s.cfg.Publish, body.Workflow, body.Topic, body.ID, body.Payload)
	})
}

func (s *Server) skipEvent(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Workflow string `json:"workflow"`
		Topic    string `json:"topic"`
		ID       string `json:"id"`
		Reason   string `json:"reason"`
		By       string `json:"by"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	if body.Workflow == "" || body.Topic == "" || body.ID == "" {
		return badf("workflow, topic and id are required")
	}
	target := body.Workflow + "/" + body.Topic + "/" + body.ID
	return s.act(w, r, "skip_event", target, body.By, body, func(ctx context.Context) (any, error) {
		res, err := view.SkipEvent(ctx, s.cfg.Store, body.Workflow, body.Topic, body.ID)
		if err == nil {
			s.wake(body.Workflow)
		}
		return res, err
	})
}
