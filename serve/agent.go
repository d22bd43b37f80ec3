package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/scripthost/scripthost/agent"
	"github.com/scripthost/scripthost/internal/view"
	"github.com/scripthost/scripthost/ledger"
)

// agentStore is the store's agent side; both bundled stores have one.
func (s *Server) agentStore() (ledger.AgentStore, error) {
	as, ok := s.cfg.Store.(ledger.AgentStore)
	if !ok {
		return nil, fmt.Errorf("serve: store %T does not record agent sessions", s.cfg.Store)
	}
	return as, nil
}

func (s *Server) agentSessions(w http.ResponseWriter, r *http.Request) error {
	q := query{r}
	l, err := q.list()
	if err != nil {
		return err
	}
	f := ledger.AgentSessionFilter{Status: q.str("status")}
	if f.Status != "" && !slices.Contains(agent.SessionStatuses, f.Status) {
		return badf("status=%q: want %s", f.Status, strings.Join(agent.SessionStatuses, ", "))
	}
	as, err := s.agentStore()
	if err != nil {
		return err
	}
	pg, err := view.AgentSessionsPage(r.Context(), as, f, l)
	if err != nil {
		return err
	}
	writePage(w, r, pg)
	return nil
}

func (s *Server) agentSession(w http.ResponseWriter, r *http.Request) error {
	as, err := s.agentStore()
	if err != nil {
		return err
	}
	t, err := agent.LoadTranscript(r.Context(), as, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

// decided is the answer to approve or deny: the call as recorded now, and what runs it.
type decided struct {
	Call ledger.AgentToolCall `json:"call"`
	Next string               `json:"next"`
}

// decide approves or denies a call that waits for approval, through the same code
// path as `scripthost agent approve|deny`; `scripthost agent resume` then goes on.
func (s *Server) decide(approve bool) handlerFunc {
	name := "deny"
	if approve {
		name = "approve"
	}
	return func(w http.ResponseWriter, r *http.Request) error {
		var body struct {
			Call   string `json:"call"`
			By     string `json:"by"`
			Reason string `json:"reason,omitempty"`
		}
		if err := decode(r, &body); err != nil {
			return err
		}
		if strings.TrimSpace(body.Call) == "" {
			return badf("call: the id of the tool call to %s is required (e.g. \"step/1/1\")", name)
		}
		session := r.PathValue("id")
		by := operator(body.By)
		target := "agent session " + session + " call " + body.Call
		return s.act(w, r, name, target, by, body, func(ctx context.Context) (any, error) {
			if err := agent.Decide(ctx, s.cfg.Store, session, body.Call, approve, by); err != nil {
				return nil, err
			}
			as, err := s.agentStore()
			if err != nil {
				return nil, err
			}
			calls, err := as.AgentToolCalls(ctx, session)
			if err != nil {
				return nil, err
			}
			for _, c := range calls {
				if c.CallID == body.Call {
					return decided{Call: c, Next: "scripthost agent resume " + session}, nil
				}
			}
			return nil, errors.New("serve: the decided call is gone from the ledger")
		})
	}
}
