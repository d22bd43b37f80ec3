package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// Message is one entry of a conversation with the model.
type Message struct {
	Role       string     `json:"role"` // system, user, assistant, tool
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is a call the model asks for; Arguments is the JSON text it wrote, which
// may be anything.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolDef describes a tool to the model: Parameters is its input JSON Schema.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Request is one model call.
type Request struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Tools    []ToolDef `json:"tools,omitempty"`
}

// Usage counts tokens.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// Total is prompt plus completion tokens.
func (u Usage) Total() int { return u.PromptTokens + u.CompletionTokens }

func (u *Usage) add(v Usage) {
	u.PromptTokens += v.PromptTokens
	u.CompletionTokens += v.CompletionTokens
}

// Response is the model's answer: one assistant message and the server's usage.
type Response struct {
	Message      Message `json:"message"`
	Usage        Usage   `json:"usage"`
	FinishReason string  `json:"finish_reason,omitempty"`
}

// Driver calls a model. Embedders plug in their own; NewOpenAI talks to
// OpenAI-compatible chat-completions servers. A Driver returns a *TransientError for
// a failure worth retrying (unreachable, 429, 5xx, timeout).
type Driver interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// DriverFunc adapts a function to Driver.
type DriverFunc func(ctx context.Context, req Request) (Response, error)

// Complete calls f.
func (f DriverFunc) Complete(ctx context.Context, req Request) (Response, error) { return f(ctx, req) }

// TransientError is a failure that may go away: the executor retries it with backoff.
type TransientError struct {
	Err error
	// RetryAfter is the wait the server asked for, if any.
	RetryAfter time.Duration
}

func (e *TransientError) Error() string { return "transient: " + e.Err.Error() }
func (e *TransientError) Unwrap() error { return e.Err }

// ErrNotLoopback: the model server is not on this machine and was not allowed.
var ErrNotLoopback = errors.New("agent: model server is not a loopback address")

// CheckBaseURL refuses a base URL whose host is not a loopback address (localhost,
// 127.0.0.0/8, ::1) unless it is in allowed (host or host:port).
func CheckBaseURL(base string, allowed []string) error {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("agent: model base URL %q: want http(s)://host[:port]/path", base)
	}
	host := u.Hostname()
	for _, a := range allowed {
		if a == host || a == u.Host {
			return nil
		}
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: %s (allow it explicitly with --allow-model-host %s)", ErrNotLoopback, base, host)
}

// OpenAIConfig configures NewOpenAI.
type OpenAIConfig struct {
	BaseURL string // e.g. http://127.0.0.1:8080/v1
	APIKey  string
	// Timeout bounds one request; default 5 minutes (local models are slow).
	Timeout time.Duration
	// AllowedHosts are non-loopback hosts the operator allows.
	AllowedHosts []string
	// MaxResponseBytes caps the body of one answer, default DefaultMaxResponseBytes.
	// It is enforced while reading: a larger body is refused after the cap, never
	// read whole, and the call fails with a *ResponseTooLargeError.
	MaxResponseBytes int64
}

// ResponseTooLargeError is a model server's answer that was larger than the cap; the
// part read is dropped.
type ResponseTooLargeError struct{ Limit int64 }

func (e *ResponseTooLargeError) Error() string {
	return fmt.Sprintf("agent: the model server's answer is larger than the %d-byte cap (max_response_bytes); refused without reading the rest", e.Limit)
}

// cappedBody reads at most limit bytes of a response body, then fails.
type cappedBody struct {
	rc    io.ReadCloser
	left  int64
	limit int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, &ResponseTooLargeError{Limit: b.limit}
	}
	// Read one byte past the cap so a body of exactly the cap is allowed.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, &ResponseTooLargeError{Limit: b.limit}
	}
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// capResponses is client middleware that caps every response body.
func capResponses(limit int64) option.Middleware {
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(req)
		if err != nil || res == nil || res.Body == nil {
			return res, err
		}
		if res.ContentLength > limit {
			res.Body.Close()
			return nil, &ResponseTooLargeError{Limit: limit}
		}
		res.Body = &cappedBody{rc: res.Body, left: limit, limit: limit}
		return res, nil
	}
}

type openAIDriver struct {
	client  openai.Client
	timeout time.Duration
}

// NewOpenAI returns a Driver for an OpenAI-compatible chat-completions server (llama.cpp
// server, Ollama, vLLM, LM Studio). The client's own retries are off: the executor
// retries, with its clock, and records each retry.
func NewOpenAI(cfg OpenAIConfig) (Driver, error) {
	if err := CheckBaseURL(cfg.BaseURL, cfg.AllowedHosts); err != nil {
		return nil, err
	}
	key := cfg.APIKey
	if key == "" {
		key = "none" // local servers ignore it; the client wants one
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Minute
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	c := openai.NewClient(option.WithBaseURL(cfg.BaseURL), option.WithAPIKey(key), option.WithMaxRetries(0),
		option.WithMiddleware(capResponses(cfg.MaxResponseBytes)))
	return &openAIDriver{client: c, timeout: cfg.Timeout}, nil
}

func (d *openAIDriver) Complete(ctx context.Context, req Request) (Response, error) {
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(req.Model)}
	for _, m := range req.Messages {
		switch m.Role {
		case "system":
			p.Messages = append(p.Messages, openai.SystemMessage(m.Content))
		case "user":
			p.Messages = append(p.Messages, openai.UserMessage(m.Content))
		case "tool":
			p.Messages = append(p.Messages, openai.ToolMessage(m.Content, m.ToolCallID))
		case "assistant":
			a := openai.ChatCompletionAssistantMessageParam{}
			if m.Content != "" {
				a.Content.OfString = openai.String(m.Content)
			}
			for _, c := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: c.Arguments}}})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		}
	}
	for _, t := range req.Tools {
		var params map[string]any
		if err := json.Unmarshal(t.Parameters, &params); err != nil {
			return Response{}, fmt.Errorf("agent: tool %s: parameters schema: %w", t.Name, err)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: t.Name, Description: openai.String(t.Description), Parameters: shared.FunctionParameters(params)}))
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	resp, err := d.client.Chat.Completions.New(ctx, p)
	if err != nil {
		return Response{}, classifyModelError(ctx, err)
	}
	if len(resp.Choices) == 0 {
		return Response{}, &TransientError{Err: errors.New("agent: the model server answered with no choices")}
	}
	ch := resp.Choices[0]
	out := Response{
		Message:      Message{Role: "assistant", Content: ch.Message.Content},
		Usage:        Usage{PromptTokens: int(resp.Usage.PromptTokens), CompletionTokens: int(resp.Usage.CompletionTokens)},
		FinishReason: string(ch.FinishReason),
	}
	for _, c := range ch.Message.ToolCalls {
		out.Message.ToolCalls = append(out.Message.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	return out, nil
}

// classifyModelError makes 429, 5xx, timeouts and connection failures transient.
func classifyModelError(ctx context.Context, err error) error {
	var big *ResponseTooLargeError
	if errors.As(err, &big) {
		return big // the same prompt would most likely bring the same answer
	}
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		code := apiErr.StatusCode
		if code == 429 || code >= 500 || code == 408 {
			var wait time.Duration
			if apiErr.Response != nil {
				if s := apiErr.Response.Header.Get("Retry-After"); s != "" {
					if d, perr := time.ParseDuration(strings.TrimSpace(s) + "s"); perr == nil {
						wait = d
					}
				}
			}
			return &TransientError{Err: fmt.Errorf("agent: model server: %d %s", code, strings.TrimSpace(apiErr.Message)), RetryAfter: wait}
		}
		return fmt.Errorf("agent: model server refused the request: %d %s", code, strings.TrimSpace(apiErr.Message))
	}
	if ctx.Err() != nil && !errors.Is(err, context.Canceled) {
		return &TransientError{Err: fmt.Errorf("agent: model server timed out: %w", err)}
	}
	var ne net.Error
	var oe *net.OpError
	if errors.As(err, &oe) || errors.As(err, &ne) || strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "connection") {
		return &TransientError{Err: fmt.Errorf("agent: model server unreachable: %w", err)}
	}
	return fmt.Errorf("agent: model call: %w", err)
}
