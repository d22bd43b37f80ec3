package wasm

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
)

// filesTools is an in-memory stand-in for the workspace and topic tools the files
// example uses: Files.list/read/write over a map, Topics.peek/publish over a list.
type filesTools struct {
	files     map[string]string
	published []map[string]any
	pending   []map[string]any // what Topics.peek returns
}

func (f *filesTools) List() []sandbox.ToolName {
	return []sandbox.ToolName{{Namespace: "Files", Method: "list"}, {Namespace: "Files", Method: "read"},
		{Namespace: "Files", Method: "write"}, {Namespace: "Topics", Method: "peek"}, {Namespace: "Topics", Method: "publish"}}
}

func (f *filesTools) Call(_ context.Context, ns, method string, in json.RawMessage) (json.RawMessage, error) {
	var args map[string]any
	if err := json.Unmarshal(in, &args); err != nil {
		return nil, err
	}
	switch ns + "." + method {
	case "Files.list":
		var out []map[string]any
		prefix := args["dir"].(string) + "/"
		for p, c := range f.files {
			if name, ok := strings.CutPrefix(p, prefix); ok {
				out = append(out, map[string]any{"name": name, "size": len(c)})
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i]["name"].(string) < out[j]["name"].(string) })
		return json.Marshal(out)
	case "Files.read":
		return json.Marshal(map[string]string{"content": f.files[args["path"].(string)]})
	case "Files.write":
		f.files[args["path"].(string)] = args["content"].(string)
		return json.Marshal(map[string]any{"path": args["path"], "bytes": len(args["content"].(string))})
	case "Topics.peek":
		return json.Marshal(f.pending)
	case "Topics.publish":
		f.published = append(f.published, args)
		return json.RawMessage(`{}`), nil
	}
	return nil, scripthost.Errorf(scripthost.ClassLogic, scripthost.CodeUnknownTool, "no tool %s.%s", ns, method)
}

// TestFilesExample runs the Go files example (scripts/files-wasm) through one pass of
// its producer and its consumer's three phases.
func TestFilesExample(t *testing.T) {
	code := buildGuest(t, "../../scripts/files-wasm")
	p, err := sharedEngine(t).Load(context.Background(), sandbox.Source{Name: "workflow.wasm", Code: code})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	def, _ := p.Definition(context.Background())
	for _, want := range []string{`"handler":"scan"`, `"prepare":"process_prepare"`, `"every":"5m"`, `"topics":["files","done"]`} {
		if !strings.Contains(string(def), want) {
			t.Errorf("definition %s: want it to contain %s", def, want)
		}
	}

	tools := &filesTools{files: map[string]string{"inbox/a.txt": "hello", "inbox/b.txt": "world"}}
	invoke := func(fn string, phase scripthost.Phase, g sandbox.Globals) json.RawMessage {
		t.Helper()
		res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: fn, Phase: phase, Globals: g, Tools: tools})
		if err != nil {
			t.Fatalf("%s: %v", fn, err)
		}
		return res.Value
	}

	state := invoke("scan", scripthost.PhaseProducer, sandbox.Globals{State: json.RawMessage(`{"seen":["b.txt"]}`)})
	if got := string(state); got != `{"seen":["a.txt","b.txt"]}` {
		t.Errorf("scan state: got %s", got)
	}
	if len(tools.published) != 1 || tools.published[0]["id"] != "a.txt" || tools.published[0]["topic"] != "files" {
		t.Fatalf("scan published %v, want one files event a.txt", tools.published)
	}

	tools.pending = []map[string]any{{"id": "a.txt", "topic": "files", "payload": map[string]string{"name": "a.txt"}, "attempt": 1}}
	prep := invoke("process_prepare", scripthost.PhasePrepare, sandbox.Globals{State: json.RawMessage(`null`)})
	var pr struct {
		Reservations []struct {
			Topic string
			IDs   []string
		}
		Data json.RawMessage
	}
	if err := json.Unmarshal(prep, &pr); err != nil || len(pr.Reservations) != 1 || pr.Reservations[0].IDs[0] != "a.txt" {
		t.Fatalf("prepare: got %s, want a reservation of a.txt", prep)
	}
	invoke("process_mutate", scripthost.PhaseMutate, sandbox.Globals{Prepared: pr.Data})
	if got := tools.files["outbox/a.txt"]; got != "HELLO" {
		t.Errorf("outbox/a.txt: got %q, want HELLO", got)
	}
	next := invoke("process_next", scripthost.PhaseNext, sandbox.Globals{Prepared: pr.Data, MutationResult: json.RawMessage(`{"status":"applied"}`)})
	if string(next) != `{"processed":1}` {
		t.Errorf("next state: got %s", next)
	}
	last := tools.published[len(tools.published)-1]
	if last["topic"] != "done" || last["id"] != "a.txt" {
		t.Errorf("next published %v, want done a.txt", last)
	}
}
