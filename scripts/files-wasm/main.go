//go:build wasip1

// Command files-wasm is the files example workflow written in Go and compiled to
// WebAssembly: the same job as scripts/files/workflow.js. A producer notices new files
// in inbox/ and publishes one event per file; a consumer writes an upper-cased copy to
// outbox/ as its one mutation, then publishes a `done` event from next; a second
// consumer logs what was done. Running it again processes nothing twice: the producer
// remembers what it has seen, and event ids are the file names.
//
// Build it with ./build.sh (or the top-level Makefile):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o scripts/files-wasm/workflow.wasm ./scripts/files-wasm
package main

import (
	"sort"
	"strings"

	"github.com/scripthost/scripthost/sandbox/wasm/guest"
)

func init() {
	guest.Define(guest.Workflow{
		Topics: []string{"files", "done"},
		Producers: map[string]guest.Producer{
			"scan": {Schedule: &guest.Schedule{Every: "5m"}, Publishes: []string{"files"}, Handler: "scan"},
		},
		Consumers: map[string]guest.Consumer{
			"process": {
				Subscribe: []string{"files"}, Publishes: []string{"done"},
				Prepare: "process_prepare", Mutate: "process_mutate", Next: "process_next",
			},
			"report": {Subscribe: []string{"done"}, Prepare: "report_prepare", Next: "report_next"},
		},
	})
	// encoding/json's work for these types, done once here instead of in every phase.
	guest.Warm(scanState{Seen: []string{"a"}}, []entry{{Name: "a"}}, filePayload{}, processState{},
		prepared{}, prepareResult{Reservations: []reservation{{IDs: []string{"a"}}}})
}

// main is not run in a c-shared module; the host calls the exports below.
func main() {}

type entry struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	Dir  bool   `json:"dir"`
}

type scanState struct {
	Seen []string `json:"seen"`
}

type filePayload struct {
	Name string `json:"name"`
}

//go:wasmexport scan
func scan() {
	guest.Handle(func() (any, error) {
		var st scanState
		if err := guest.State(&st); err != nil && err != guest.ErrUndefined {
			return nil, err
		}
		seen := map[string]bool{}
		for _, n := range st.Seen {
			seen[n] = true
		}
		var entries []entry
		if err := guest.Call("Files", "list", map[string]string{"dir": "inbox"}, &entries); err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.Dir || seen[e.Name] {
				continue
			}
			if err := guest.Publish("files", e.Name, filePayload{Name: e.Name}); err != nil {
				return nil, err
			}
			seen[e.Name] = true
		}
		out := scanState{Seen: make([]string, 0, len(seen))}
		for n := range seen {
			out.Seen = append(out.Seen, n)
		}
		sort.Strings(out.Seen)
		return out, nil
	})
}

type processState struct {
	Processed int `json:"processed"`
}

type reservation struct {
	Topic string   `json:"topic"`
	IDs   []string `json:"ids"`
}

type prepared struct {
	Name      string `json:"name"`
	Content   string `json:"content"`
	Processed int    `json:"processed"`
}

type prepareResult struct {
	Reservations []reservation `json:"reservations"`
	Data         any           `json:"data"`
}

//go:wasmexport process_prepare
func processPrepare() {
	guest.Handle(func() (any, error) {
		var st processState
		if err := guest.State(&st); err != nil && err != guest.ErrUndefined {
			return nil, err
		}
		events, err := guest.Peek("files", 10)
		if err != nil {
			return nil, err
		}
		if len(events) == 0 {
			return prepareResult{Reservations: []reservation{}}, nil
		}
		ev := events[0]
		var p filePayload
		if err := decodeJSON(ev.Payload, &p); err != nil {
			return nil, err
		}
		var file struct {
			Content string `json:"content"`
		}
		if err := guest.Call("Files", "read", map[string]string{"path": "inbox/" + p.Name}, &file); err != nil {
			return nil, err
		}
		return prepareResult{
			Reservations: []reservation{{Topic: "files", IDs: []string{ev.ID}}},
			Data:         prepared{Name: p.Name, Content: file.Content, Processed: st.Processed + 1},
		}, nil
	})
}

//go:wasmexport process_mutate
func processMutate() {
	guest.Handle(func() (any, error) {
		var p *prepared
		if err := guest.Prepared(&p); err != nil || p == nil {
			return nil, err
		}
		var out any
		err := guest.Call("Files", "write", map[string]string{
			"path": "outbox/" + p.Name, "content": strings.ToUpper(p.Content)}, &out)
		return out, err
	})
}

//go:wasmexport process_next
func processNext() {
	guest.Handle(func() (any, error) {
		var p *prepared
		if err := guest.Prepared(&p); err != nil || p == nil {
			return nil, err // nothing reserved: keep the state
		}
		var result struct {
			Status string `json:"status"`
		}
		if err := guest.MutationResult(&result); err != nil && err != guest.ErrUndefined {
			return nil, err
		}
		if err := guest.Publish("done", p.Name, map[string]string{"name": p.Name, "status": result.Status}); err != nil {
			return nil, err
		}
		return processState{Processed: p.Processed}, nil
	})
}

//go:wasmexport report_prepare
func reportPrepare() {
	guest.Handle(func() (any, error) {
		events, err := guest.Peek("done", 100)
		if err != nil {
			return nil, err
		}
		res := prepareResult{Reservations: []reservation{}}
		names := []string{}
		ids := []string{}
		for _, e := range events {
			var p filePayload
			if err := decodeJSON(e.Payload, &p); err != nil {
				return nil, err
			}
			names = append(names, p.Name)
			ids = append(ids, e.ID)
		}
		if len(ids) > 0 {
			res.Reservations = append(res.Reservations, reservation{Topic: "done", IDs: ids})
		}
		res.Data = names
		return res, nil
	})
}

//go:wasmexport report_next
func reportNext() {
	guest.Handle(func() (any, error) {
		var names []string
		if err := guest.Prepared(&names); err != nil && err != guest.ErrUndefined {
			return nil, err
		}
		if len(names) > 0 {
			guest.Log("done: " + strings.Join(names, ", "))
		}
		return nil, nil
	})
}
