// Package fakemodel is a scripted chat-completions server for tests: a real HTTP
// server on loopback that answers each request with the next entry of a script (text,
// tool calls, malformed tool calls, error statuses, slow answers) and records what it
// was sent.
package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// Call is a tool call in an answer. Args is sent as is: it may be malformed JSON.
type Call struct {
	Name string
	Args string
}

// Answer is one scripted response.
type Answer struct {
	Text  string
	Calls []Call
	// Status, when not 0 or 200, answers with that HTTP status and an error body.
	Status int
	// Delay holds the answer back (a slow model).
	Delay time.Duration
	// PromptTokens and CompletionTokens are reported as usage; zero sends estimates.
	PromptTokens, CompletionTokens int
	// Body, when set, is sent as the response body as is, chunked and without a
	// length (an answer too large, or one that never ends).
	Body io.Reader
}

// Request is what a client sent, decoded.
type Request struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	Raw json.RawMessage `json:"-"`
	// Header is the request's HTTP header (Authorization included).
	Header http.Header `json:"-"`
}

// Text returns message i's content as text.
func (r Request) Text(i int) string {
	var s string
	if json.Unmarshal(r.Messages[i].Content, &s) == nil {
		return s
	}
	return string(r.Messages[i].Content)
}

// ToolNames lists the tools the request offered.
func (r Request) ToolNames() []string {
	var out []string
	for _, t := range r.Tools {
		out = append(out, t.Function.Name)
	}
	return out
}

// Server is a running fake model server.
type Server struct {
	URL string // base URL, ending in /v1
	srv *httptest.Server

	mu       sync.Mutex
	script   []Answer
	next     func(Request) Answer
	requests []Request
}

// New starts a server on 127.0.0.1 that answers with script, in order. After the
// script it answers 400 "script exhausted".
func New(script ...Answer) *Server {
	s := &Server{script: script}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.handle))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("fakemodel: listen: %v", err))
	}
	s.srv.Listener = l
	s.srv.Start()
	s.URL = s.srv.URL + "/v1"
	return s
}

// NewFunc starts a server that answers each request with next(request).
func NewFunc(next func(Request) Answer) *Server {
	s := New()
	s.next = next
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Count is the number of requests received.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Requests returns the requests received, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":%q}}`, err.Error())
		return
	}
	req.Raw = body
	req.Header = r.Header.Clone()
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, req)
	var a Answer
	ok := true
	switch {
	case s.next != nil:
		a = s.next(req)
	case n < len(s.script):
		a = s.script[n]
	default:
		ok = false
	}
	s.mu.Unlock()
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"script exhausted","type":"invalid_request_error"}}`)
		return
	}
	if a.Delay > 0 {
		select {
		case <-time.After(a.Delay):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if a.Body != nil {
		io.Copy(w, a.Body) // ends when the client hangs up
		return
	}
	if a.Status != 0 && a.Status != http.StatusOK {
		w.WriteHeader(a.Status)
		fmt.Fprintf(w, `{"error":{"message":"scripted status %d","type":"server_error"}}`, a.Status)
		return
	}
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type tc struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	msg := map[string]any{"role": "assistant", "content": a.Text}
	var calls []tc
	for i, c := range a.Calls {
		calls = append(calls, tc{ID: fmt.Sprintf("call_%d_%d", n+1, i+1), Type: "function", Function: fn{Name: c.Name, Arguments: c.Args}})
	}
	finish := "stop"
	if len(calls) > 0 {
		msg["tool_calls"] = calls
		finish = "tool_calls"
	}
	pt, ct := a.PromptTokens, a.CompletionTokens
	if pt == 0 && ct == 0 {
		pt, ct = len(body)/4, 1+len(a.Text)/4
	}
	json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n+1), "object": "chat.completion", "created": 1700000000, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]int{"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
	})
}
