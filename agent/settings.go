package agent

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/scripthost/scripthost/ledger"
)

// Default caps of one model answer and of one tool call's arguments.
const (
	DefaultMaxResponseBytes = 1 << 20
	DefaultMaxArgumentBytes = 1 << 20
)

// Program is a program run_terminal may run; a read-only one runs without approval
// and is not recorded as a mutation.
type Program struct {
	Name     string `yaml:"name" json:"name"`
	ReadOnly bool   `yaml:"read_only" json:"read_only,omitempty"`
}

// Settings are what the operator allowed a session: where it works, which model
// server it talks to with which key, which programs it may run and what needs
// approval. They are fixed when the session starts and stored with it, so that a
// resume, from any directory, works with the same ones; a resume may narrow them,
// never widen them (Permits).
type Settings struct {
	// Workspace is the workspace's absolute path, symbolic links resolved.
	Workspace    string   `json:"workspace"`
	ModelURL     string   `json:"model_url"`
	ModelName    string   `json:"model_name,omitempty"`
	AllowedHosts []string `json:"allowed_hosts,omitempty"`
	// APIKeyEnv names the variable the key is read from; the key is never stored.
	APIKeyEnv string    `json:"api_key_env,omitempty"`
	Programs  []Program `json:"programs,omitempty"`
	Approvals Approvals `json:"approvals"`
	// UnsafeCommands runs commands without an OS sandbox where none is available.
	UnsafeCommands bool `json:"unsafe_commands,omitempty"`
	// SecretEnv names variables whose values are redacted.
	SecretEnv        []string `json:"secret_env,omitempty"`
	MaxResponseBytes int64    `json:"max_response_bytes"`
	MaxArgumentBytes int64    `json:"max_argument_bytes"`
	// TaskInWorkspace marks a task read from inside the workspace, or from a place
	// not known, where the agent may have rewritten it: a step's check whose program
	// is not read-only then goes through the terminal approval policy, as a
	// run_terminal call does, instead of running unasked.
	TaskInWorkspace bool `json:"task_in_workspace,omitempty"`
}

// WideningError is a setting asked for on resume that is wider than the session's.
type WideningError struct {
	// Field is the setting's name in Settings' JSON form (approvals.terminal for an
	// approval class).
	Field          string
	Session, Asked string
}

func (e *WideningError) Error() string {
	return fmt.Sprintf("agent: %s %s is wider than the session's %s: a session keeps the settings it started with", e.Field, e.Asked, e.Session)
}

// approvalRank orders approval settings from narrow to wide.
func approvalRank(v string) int {
	switch v {
	case Deny:
		return 0
	case Prompt, NonInteractiveFail, NonInteractiveSkip:
		return 1
	}
	return 2 // auto
}

// Permits reports whether n asks for nothing s does not allow: the same workspace,
// model server, model and key variable; allowed hosts and programs among s's (a
// program read-only only where s's is); approvals, caps and unsafe commands no
// wider; every secret of s still redacted; the checks of a task s treats as the
// agent's still asked about. The error is a *WideningError.
func (s Settings) Permits(n Settings) error {
	wide := func(field, session, asked string) error {
		return &WideningError{Field: field, Session: session, Asked: asked}
	}
	if filepath.Clean(n.Workspace) != filepath.Clean(s.Workspace) {
		return wide("workspace", s.Workspace, n.Workspace)
	}
	if n.ModelURL != s.ModelURL {
		return wide("model_url", s.ModelURL, n.ModelURL)
	}
	if n.ModelName != s.ModelName {
		return wide("model_name", quoted(s.ModelName), quoted(n.ModelName))
	}
	if n.APIKeyEnv != s.APIKeyEnv {
		return wide("api_key_env", quoted(s.APIKeyEnv), quoted(n.APIKeyEnv))
	}
	for _, h := range n.AllowedHosts {
		if !slices.Contains(s.AllowedHosts, h) {
			return wide("allowed_hosts", fmt.Sprint(s.AllowedHosts), h)
		}
	}
	for _, p := range n.Programs {
		i := slices.IndexFunc(s.Programs, func(q Program) bool { return q.Name == p.Name })
		switch {
		case i < 0:
			return wide("programs", programList(s.Programs), p.Name)
		case p.ReadOnly && !s.Programs[i].ReadOnly:
			return wide("programs", p.Name+" (needs approval)", p.Name+" (read-only)")
		}
	}
	sa, na := s.Approvals.withDefaults(), n.Approvals.withDefaults()
	for _, c := range []struct{ field, session, asked string }{
		{"approvals.file_write", sa.FileWrite, na.FileWrite},
		{"approvals.file_delete", sa.FileDelete, na.FileDelete},
		{"approvals.terminal", sa.Terminal, na.Terminal},
		{"approvals.non_interactive_policy", sa.NonInteractivePolicy, na.NonInteractivePolicy},
	} {
		if approvalRank(c.asked) > approvalRank(c.session) {
			return wide(c.field, c.session, c.asked)
		}
	}
	if n.UnsafeCommands && !s.UnsafeCommands {
		return wide("unsafe_commands", "false", "true")
	}
	if s.TaskInWorkspace && !n.TaskInWorkspace {
		return wide("task_in_workspace", "true", "false")
	}
	for _, e := range s.SecretEnv {
		if !slices.Contains(n.SecretEnv, e) {
			return wide("secret_env", fmt.Sprint(s.SecretEnv), fmt.Sprint(n.SecretEnv))
		}
	}
	if n.MaxResponseBytes > s.MaxResponseBytes {
		return wide("max_response_bytes", fmt.Sprint(s.MaxResponseBytes), fmt.Sprint(n.MaxResponseBytes))
	}
	if n.MaxArgumentBytes > s.MaxArgumentBytes {
		return wide("max_argument_bytes", fmt.Sprint(s.MaxArgumentBytes), fmt.Sprint(n.MaxArgumentBytes))
	}
	return nil
}

func quoted(s string) string { return fmt.Sprintf("%q", s) }

func programList(ps []Program) string {
	names := make([]string, 0, len(ps))
	for _, p := range ps {
		names = append(names, p.Name)
	}
	return fmt.Sprint(names)
}

// specSettingsKey is the key of the settings in a session's stored spec, beside the
// task's own fields (which the web UI reads where they are).
const specSettingsKey = "settings"

// encodeSpec is the stored form of a session's task with its settings.
func encodeSpec(taskJSON json.RawMessage, s *Settings) (json.RawMessage, error) {
	if s == nil {
		return taskJSON, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(taskJSON, &m); err != nil {
		return nil, fmt.Errorf("agent: encode task: %w", err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("agent: encode settings: %w", err)
	}
	m[specSettingsKey] = b
	return json.Marshal(m)
}

// SessionSpec decodes a stored session's task and the settings it started with; the
// settings are nil for a session recorded before sessions kept them.
func SessionSpec(sess ledger.AgentSession) (*Task, *Settings, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(sess.Spec, &m); err != nil {
		return nil, nil, fmt.Errorf("agent: session %s: stored task: %w", sess.ID, err)
	}
	var s *Settings
	if raw, ok := m[specSettingsKey]; ok {
		s = &Settings{}
		if err := json.Unmarshal(raw, s); err != nil {
			return nil, nil, fmt.Errorf("agent: session %s: stored settings: %w", sess.ID, err)
		}
		delete(m, specSettingsKey)
	}
	b, _ := json.Marshal(m)
	var t Task
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, nil, fmt.Errorf("agent: session %s: stored task: %w", sess.ID, err)
	}
	return &t, s, nil
}
