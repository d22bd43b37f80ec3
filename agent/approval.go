package agent

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"gopkg.in/yaml.v3"

	"github.com/scripthost/scripthost/internal/yamlerr"
)

// Approval settings of a class of calls.
const (
	Prompt = "prompt"
	Auto   = "auto"
	Deny   = "deny"
)

// What a call that needs a prompt does when there is nobody to ask.
const (
	NonInteractiveAuto = "auto" // run it
	NonInteractiveSkip = "skip" // tell the model it was skipped
	NonInteractiveFail = "fail" // pause the session for approve/deny (exit 33)
)

// Approvals is the approval policy, per class of mutating call.
type Approvals struct {
	FileWrite            string `yaml:"file_write" json:"file_write"`
	FileDelete           string `yaml:"file_delete" json:"file_delete"`
	Terminal             string `yaml:"terminal" json:"terminal"`
	NonInteractivePolicy string `yaml:"non_interactive_policy" json:"non_interactive_policy"`
}

// DefaultApprovals: file writes run, deletes and commands ask, and without a person to
// ask the session pauses.
func DefaultApprovals() Approvals {
	return Approvals{FileWrite: Auto, FileDelete: Prompt, Terminal: Prompt, NonInteractivePolicy: NonInteractiveFail}
}

func (a Approvals) withDefaults() Approvals {
	d := DefaultApprovals()
	if a.FileWrite == "" {
		a.FileWrite = d.FileWrite
	}
	if a.FileDelete == "" {
		a.FileDelete = d.FileDelete
	}
	if a.Terminal == "" {
		a.Terminal = d.Terminal
	}
	if a.NonInteractivePolicy == "" {
		a.NonInteractivePolicy = d.NonInteractivePolicy
	}
	return a
}

// Validate reports a setting that is not one of the allowed values.
func (a Approvals) Validate() error {
	for k, v := range map[string]string{"file_write": a.FileWrite, "file_delete": a.FileDelete, "terminal": a.Terminal} {
		if v != "" && v != Prompt && v != Auto && v != Deny {
			return fmt.Errorf("agent: approvals: %s: %q is not prompt, auto or deny", k, v)
		}
	}
	switch a.NonInteractivePolicy {
	case "", NonInteractiveAuto, NonInteractiveSkip, NonInteractiveFail:
	default:
		return fmt.Errorf("agent: approvals: non_interactive_policy: %q is not auto, skip or fail", a.NonInteractivePolicy)
	}
	return nil
}

// For returns the setting of a class.
func (a Approvals) For(class string) string {
	a = a.withDefaults()
	switch class {
	case ClassFileWrite:
		return a.FileWrite
	case ClassFileDelete:
		return a.FileDelete
	}
	return a.Terminal
}

// Config is the operator's agent config file: $XDG_CONFIG_HOME/scripthost/agent.yaml
// (else ~/.config/scripthost/agent.yaml) or --config, never a file in the workspace,
// which the agent itself can write.
type Config struct {
	Approvals Approvals `yaml:"approvals"`
	Model     struct {
		BaseURL string `yaml:"base_url"`
		Name    string `yaml:"name"`
		// APIKeyEnv names the variable holding the model server's key.
		APIKeyEnv    string   `yaml:"api_key_env"`
		AllowedHosts []string `yaml:"allowed_hosts"`
		// MaxResponseBytes and MaxArgumentBytes cap one answer and one tool call's
		// arguments (default 1 MiB each).
		MaxResponseBytes int64 `yaml:"max_response_bytes"`
		MaxArgumentBytes int64 `yaml:"max_argument_bytes"`
	} `yaml:"model"`
	// Programs are the commands run_terminal may run.
	Programs []Program `yaml:"programs"`
}

// LoadConfig reads an agent config file; a missing file is the zero config.
func LoadConfig(path string) (Config, error) {
	var c Config
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("agent: config: %w", err)
	}
	dec := yaml.NewDecoder(bytesReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && err.Error() != "EOF" {
		return c, fmt.Errorf("agent: config %s: %w", path, yamlerr.Fix(err))
	}
	if err := c.Approvals.Validate(); err != nil {
		return c, fmt.Errorf("agent: config %s: %w", path, err)
	}
	return c, nil
}

// Answer is a person's decision on a call.
type Answer string

// Answers a Prompter gives.
const (
	AnswerApprove  Answer = "approve"
	AnswerDeny     Answer = "deny"
	AnswerSkipStep Answer = "skip_step"
)

// PendingCall is a call waiting for a decision.
type PendingCall struct {
	Session, Step, CallID, Tool, Class string
	// Preview shows what the call will do: the first lines of a file to write, the
	// edits or diff, the command.
	Preview string
	// Unknown marks a call whose earlier attempt's outcome is unknown: approving runs
	// it again.
	Unknown bool
}

// Prompter asks a person; the CLI's interactive mode implements it.
type Prompter interface {
	Ask(ctx context.Context, c PendingCall) (Answer, error)
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
