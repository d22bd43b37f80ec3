package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/scripthost/scripthost/agent"
	"github.com/scripthost/scripthost/host"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/command"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
	"github.com/scripthost/scripthost/internal/view"
	"github.com/scripthost/scripthost/ledger"
)

func init() { commands = append(commands, agentCmd) }

// Environment variables giving the model server when neither flags nor the task do.
const (
	modelURLEnv  = "SCRIPTHOST_MODEL_URL"
	modelNameEnv = "SCRIPTHOST_MODEL"
	modelKeyEnv  = "SCRIPTHOST_MODEL_KEY"
)

type agentFlags struct {
	model, modelName, workspace, config string
	keyEnv                              string
	allowHosts, allow, allowReadOnly    []string
	jsonl, verbose, interactive         bool
	fileWrite, fileDelete, terminal     string
	nonInteractive                      string
	secretEnv                           []string
	maxResponse, maxArgument            int64
}

func (f *agentFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&f.model, "model", "", "model server base URL, e.g. http://127.0.0.1:11434/v1 (default: the task's, $"+modelURLEnv+", the agent config's)")
	fl.StringVar(&f.modelName, "model-name", "", "model name (default: the task's, $"+modelNameEnv+", the agent config's)")
	fl.StringVar(&f.keyEnv, "model-key-env", "", "the environment variable holding the model server's key (default: the agent config's api_key_env, else "+modelKeyEnv+")")
	fl.StringSliceVar(&f.allowHosts, "allow-model-host", nil, "a model server host that is not loopback but allowed")
	fl.StringVar(&f.workspace, "workspace", ".", "the directory the file tools and commands are confined to")
	fl.StringVar(&f.config, "config", "", "agent config file, outside the workspace (default $XDG_CONFIG_HOME/scripthost/agent.yaml, else ~/.config/scripthost/agent.yaml)")
	fl.StringSliceVar(&f.allow, "allow", nil, "a program run_terminal may run")
	fl.StringSliceVar(&f.allowReadOnly, "allow-read-only", nil, "a program run_terminal may run that only reads (no approval, not recorded as a mutation)")
	fl.BoolVar(&f.jsonl, "jsonl", false, "write JSONL events to stdout instead of progress lines")
	fl.BoolVar(&f.verbose, "verbose", false, "also print model requests, retries and trimming")
	fl.BoolVar(&f.interactive, "interactive", false, "ask on the terminal about calls whose class is set to prompt")
	fl.StringVar(&f.fileWrite, "file-write", "", "approval of file writes: prompt, auto or deny")
	fl.StringVar(&f.fileDelete, "file-delete", "", "approval of file deletes: prompt, auto or deny")
	fl.StringVar(&f.terminal, "terminal", "", "approval of commands: prompt, auto or deny")
	fl.StringVar(&f.nonInteractive, "non-interactive-policy", "", "when nobody can be asked: auto, skip or fail (pause, exit 33)")
	fl.StringSliceVar(&f.secretEnv, "secret-env", nil, "an environment variable whose value is redacted everywhere")
	fl.Int64Var(&f.maxResponse, "max-model-response", 0, "the largest model answer in bytes (default: the agent config's, else 1 MiB)")
	fl.Int64Var(&f.maxArgument, "max-tool-argument", 0, "the largest tool call arguments in bytes (default: the agent config's, else 1 MiB)")
}

func agentCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "agent", Short: "Run tasks whose steps a local language model carries out with tools"}
	var rf agentFlags
	run := &cobra.Command{
		Use: "run TASK", Short: "Run a task file (YAML or JSON) in a new session", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := os.ReadFile(args[0])
			if err != nil {
				return usagef("%v", err)
			}
			t, err := agent.ParseTask(args[0], raw)
			if err != nil {
				return err
			}
			s, err := newAgentSettings(g, rf, t, args[0])
			if err != nil {
				return err
			}
			return runAgent(cmd.Context(), g, rf, s, func(x *agent.Executor) (agent.Result, error) {
				return x.Run(cmd.Context(), args[0], t)
			})
		},
	}
	rf.register(run)
	var sf agentFlags
	resume := &cobra.Command{
		Use: "resume SESSION", Short: "Continue a session after a crash or an approval, with the settings it started with", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := g.openStore(cmd.Context())
			if err != nil {
				return err
			}
			sess, err := store.(ledger.AgentStore).AgentSession(cmd.Context(), args[0])
			store.Close()
			if err != nil {
				return err
			}
			t, stored, err := agent.SessionSpec(sess)
			if err != nil {
				return err
			}
			var s agent.Settings
			if stored != nil {
				s, err = resumeAgentSettings(cmd, g, sf, *stored)
			} else {
				fmt.Fprintf(g.Stderr, "scripthost: warning: session %s was recorded without its settings; resuming with the flags and agent config given\n", args[0])
				s, err = newAgentSettings(g, sf, t, "")
			}
			if err != nil {
				return err
			}
			return runAgent(cmd.Context(), g, sf, s, func(x *agent.Executor) (agent.Result, error) {
				return x.Resume(cmd.Context(), args[0])
			})
		},
	}
	sf.register(resume)
	decide := func(approve bool) *cobra.Command {
		verb, short := "deny", "Deny a call that waits for approval: the model is told it did not run"
		if approve {
			verb, short = "approve", "Approve a call that waits for approval; resume then runs it"
		}
		var by, reason string
		d := &cobra.Command{
			Use: verb + " SESSION CALL [--reason TEXT]", Short: short, Args: cobra.ExactArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error {
				store, err := g.openStore(cmd.Context())
				if err != nil {
					return err
				}
				defer store.Close()
				who := approver(by)
				target := "agent session " + args[0] + " call " + args[1]
				req := map[string]string{"call": args[1]}
				if reason != "" {
					req["reason"] = reason
				}
				if _, err := recordCLI(cmd.Context(), store, verb, target, who, req, func(ctx context.Context) (any, error) {
					return nil, agent.Decide(ctx, store, args[0], args[1], approve, who)
				}); err != nil {
					return err
				}
				fmt.Fprintf(g.Stdout, "call %s %sd; run scripthost agent resume %s\n", args[1], verb, args[0])
				return nil
			},
		}
		d.Flags().StringVar(&by, "by", "", "who decides (default $USER)")
		d.Flags().StringVar(&reason, "reason", "", "why, for the audit trail")
		return d
	}
	var asJSON bool
	show := &cobra.Command{
		Use: "show SESSION", Short: "Show a session's transcript: turns, tool calls, results, tokens, timings", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := g.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer store.Close()
			return showSession(cmd.Context(), g.Stdout, store.(ledger.AgentStore), args[0], asJSON)
		},
	}
	show.Flags().BoolVar(&asJSON, "json", false, "print the session, turns and calls as JSON")
	var lf struct {
		status string
		page   pageFlags
		asJSON bool
	}
	list := &cobra.Command{
		Use: "list", Short: "List agent sessions, newest first", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if lf.status != "" && !slices.Contains(agent.SessionStatuses, lf.status) {
				return usagef("--status %q: want one of %s", lf.status, strings.Join(agent.SessionStatuses, ", "))
			}
			l, err := lf.page.list()
			if err != nil {
				return err
			}
			store, err := g.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer store.Close()
			pg, err := view.AgentSessionsPage(cmd.Context(), store.(ledger.AgentStore), ledger.AgentSessionFilter{Status: lf.status}, l)
			if err != nil {
				return err
			}
			defer printNext(g, pg.Next)
			ss := pg.Items
			if lf.asJSON {
				enc := json.NewEncoder(g.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(ss)
			}
			for _, s := range ss {
				fmt.Fprintf(g.Stdout, "%s  %-9s  %s  %s\n", s.ID, s.Status, s.CreatedAt.Format(time.RFC3339), s.Task)
			}
			return nil
		},
	}
	list.Flags().StringVar(&lf.status, "status", "", "only sessions with this status ("+strings.Join(agent.SessionStatuses, ", ")+")")
	lf.page.add(list)
	list.Flags().BoolVar(&lf.asJSON, "json", false, "print the sessions as JSON")
	c.AddCommand(run, resume, decide(true), decide(false), show, list)
	return c
}

// agentExit carries a session's result to the exit code table.
type agentExit struct{ res agent.Result }

func (e agentExit) Error() string {
	return fmt.Sprintf("agent: session %s %s: %s", e.res.Session, e.res.Status, e.res.Message)
}
func (e agentExit) ExitCode() int { return e.res.ExitCode() }

// runAgent runs a session with settings s.
func runAgent(ctx context.Context, g *globals, f agentFlags, s agent.Settings, start func(*agent.Executor) (agent.Result, error)) error {
	ws, err := workspace.New(s.Workspace)
	if err != nil {
		return usagef("workspace: %v", err)
	}
	defer ws.Close()
	if err := g.keepLedgerOut(s.Workspace); err != nil {
		return err
	}
	var progs []command.Program
	for _, p := range s.Programs {
		progs = append(progs, command.Program{Name: p.Name, ReadOnly: p.ReadOnly})
	}
	tools, err := planTools(host.ToolOptions{Workspace: ws, PlanTools: true,
		Commands: &command.Config{Programs: progs, Unsafe: s.UnsafeCommands}})
	if err != nil {
		return err
	}
	defer tools.Close()
	reg, cmds := tools.Registry, tools.Commands

	// Only the variable the operator named is read: nothing the agent can write
	// chooses which secret goes to the model server.
	key := os.Getenv(s.APIKeyEnv)
	redactor := hostfuncs.NewRedactor(key)
	for _, n := range s.SecretEnv {
		redactor.AddSecret(os.Getenv(n))
	}
	driver, err := agent.NewOpenAI(agent.OpenAIConfig{BaseURL: s.ModelURL, APIKey: key, AllowedHosts: s.AllowedHosts,
		MaxResponseBytes: s.MaxResponseBytes})
	if err != nil {
		return usagef("%v", err)
	}
	store, err := g.createStore(ctx, false)
	if err != nil {
		return err
	}
	defer store.Close()
	o := agent.Options{Store: store, Registry: reg, Driver: driver, Model: s.ModelName, Workspace: ws, Commands: cmds,
		Settings: &s, Redactor: redactor, Verbose: f.verbose}
	if f.jsonl {
		o.Events = g.Stdout
	} else {
		o.Progress = g.Stdout
	}
	if f.interactive {
		o.Prompter = &terminalPrompter{in: bufio.NewReader(g.Stdin), out: g.Stderr}
	}
	x, err := agent.New(o)
	if err != nil {
		return err
	}
	res, err := start(x)
	if err != nil {
		return err
	}
	if !f.jsonl {
		fmt.Fprintf(g.Stdout, "session %s: %s\n", res.Session, res.Status)
	}
	if res.ExitCode() != 0 {
		return agentExit{res}
	}
	return nil
}

func first(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}

// terminalPrompter asks on the terminal: approve, deny, view, or skip the step.
type terminalPrompter struct {
	in  *bufio.Reader
	out io.Writer
}

func (p *terminalPrompter) Ask(_ context.Context, c agent.PendingCall) (agent.Answer, error) {
	short := c.Preview
	if lines := strings.SplitN(short, "\n", 9); len(lines) > 8 {
		short = strings.Join(lines[:8], "\n") + "\n… (v to view all)"
	}
	fmt.Fprintf(p.out, "\n%s wants %s (%s), call %s:\n%s\n", c.Step, c.Tool, c.Class, c.CallID, short)
	for {
		fmt.Fprint(p.out, "[a]pprove, [d]eny, [v]iew, [s]kip step? ")
		line, err := p.in.ReadString('\n')
		if err != nil && line == "" {
			return agent.AnswerDeny, fmt.Errorf("no answer on standard input: %w", err)
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "a", "approve", "y", "yes":
			return agent.AnswerApprove, nil
		case "d", "deny", "n", "no":
			return agent.AnswerDeny, nil
		case "s", "skip":
			return agent.AnswerSkipStep, nil
		case "v", "view":
			fmt.Fprintln(p.out, c.Preview)
		}
	}
}

func showSession(ctx context.Context, w io.Writer, as ledger.AgentStore, id string, asJSON bool) error {
	tr, err := agent.LoadTranscript(ctx, as, id)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(tr)
	}
	sess, turns, calls := tr.Session, tr.Turns, tr.Calls
	fmt.Fprintf(w, "session %s  task %s  %s\n", sess.ID, sess.Task, sess.Status)
	byTurn := map[string][]ledger.AgentToolCall{}
	for _, c := range calls {
		k := fmt.Sprintf("%s/%d", c.StepID, c.Turn)
		byTurn[k] = append(byTurn[k], c)
	}
	step := ""
	for _, t := range turns {
		if t.StepID != step {
			step = t.StepID
			fmt.Fprintf(w, "\nstep %s\n", step)
		}
		var resp agent.Response
		_ = json.Unmarshal(t.Response, &resp)
		fmt.Fprintf(w, "  turn %d  %d+%d tokens  %d ms", t.Turn, t.PromptTokens, t.CompletionTokens, t.DurationMS)
		if t.Retries > 0 {
			fmt.Fprintf(w, "  %d retries", t.Retries)
		}
		fmt.Fprintln(w)
		if s := strings.TrimSpace(resp.Message.Content); s != "" {
			fmt.Fprintf(w, "    model: %s\n", s)
		}
		for _, c := range byTurn[fmt.Sprintf("%s/%d", t.StepID, t.Turn)] {
			fmt.Fprintf(w, "    %s %s %s  %s", c.CallID, c.Tool, string(c.Arguments), c.Status)
			if c.Decision != "" {
				fmt.Fprintf(w, " (%s)", c.Decision)
			}
			fmt.Fprintln(w)
			out := c.Error
			if out == "" {
				out = string(c.Result)
			}
			if len(out) > 200 {
				out = out[:200] + "…"
			}
			if out != "" {
				fmt.Fprintf(w, "      → %s\n", out)
			}
		}
	}
	fmt.Fprintf(w, "\ntokens %d prompt + %d completion\nstate %s\n", tr.Usage.PromptTokens, tr.Usage.CompletionTokens, sess.State)
	return nil
}

// envName is what an environment variable's name may be.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// newAgentSettings are a new session's settings, from the flags, the environment and
// the operator's agent config only: the task may choose the model only when it lies
// outside the workspace, and never the key's variable; its checks run unasked only
// then, or when their program is read-only.
func newAgentSettings(g *globals, f agentFlags, t *agent.Task, taskPath string) (agent.Settings, error) {
	var s agent.Settings
	wsDir, err := realDir(f.workspace)
	if err != nil {
		return s, usagef("--workspace: %v", err)
	}
	s.Workspace = wsDir
	cfg, err := loadAgentConfig(g, f.config, wsDir)
	if err != nil {
		return s, err
	}
	ap := cfg.Approvals
	ap.FileWrite = first(f.fileWrite, ap.FileWrite)
	ap.FileDelete = first(f.fileDelete, ap.FileDelete)
	ap.Terminal = first(f.terminal, ap.Terminal)
	ap.NonInteractivePolicy = first(f.nonInteractive, ap.NonInteractivePolicy)
	if err := ap.Validate(); err != nil {
		return s, usagef("%v", err)
	}
	s.Approvals = withDefaultApprovals(ap)
	s.Programs = append(s.Programs, cfg.Programs...)
	for _, n := range f.allow {
		s.Programs = append(s.Programs, agent.Program{Name: n})
	}
	for _, n := range f.allowReadOnly {
		s.Programs = append(s.Programs, agent.Program{Name: n, ReadOnly: true})
	}
	s.AllowedHosts = append(append([]string(nil), f.allowHosts...), cfg.Model.AllowedHosts...)
	s.UnsafeCommands = g.UnsafeCommands
	s.SecretEnv = append([]string(nil), f.secretEnv...)

	s.APIKeyEnv = first(f.keyEnv, cfg.Model.APIKeyEnv, modelKeyEnv)
	if !envName.MatchString(s.APIKeyEnv) {
		return s, usagef("--model-key-env %q: not an environment variable name", s.APIKeyEnv)
	}
	model := t.Model
	if model == nil {
		model = &agent.ModelConfig{}
	}
	if model.APIKeyEnv != "" && model.APIKeyEnv != s.APIKeyEnv {
		return s, usagef("task %s: model.api_key_env %s: the variable holding the model server's key is the operator's to name (--model-key-env or api_key_env in the agent config); it is %s", taskPath, model.APIKeyEnv, s.APIKeyEnv)
	}
	opURL := first(f.model, os.Getenv(modelURLEnv), cfg.Model.BaseURL)
	opName := first(f.modelName, os.Getenv(modelNameEnv), cfg.Model.Name)
	inWorkspace := taskPath != "" && host.Within(host.ResolvePath(taskPath), wsDir)
	// A step's check of a program that is not read-only asks as run_terminal does
	// when the agent may have written it: the task lies inside the workspace, or
	// (a session recorded without its settings) where it lay is not known.
	s.TaskInWorkspace = taskPath == "" || inWorkspace
	if inWorkspace {
		// The agent can rewrite this task file between sessions: it does not choose
		// where the conversation and the key go.
		for _, c := range []struct{ field, task, op, flag string }{
			{"model.base_url", model.BaseURL, opURL, "--model or $" + modelURLEnv},
			{"model.name", model.Name, opName, "--model-name or $" + modelNameEnv},
		} {
			if c.task != "" && c.task != c.op {
				return s, usagef("task %s lies inside the workspace %s, where the agent can rewrite it, and sets %s %q: from there it may only repeat the operator's (%s or the agent config: %q)", taskPath, wsDir, c.field, c.task, c.flag, c.op)
			}
		}
		s.ModelURL, s.ModelName = opURL, opName
	} else {
		s.ModelURL = first(f.model, model.BaseURL, os.Getenv(modelURLEnv), cfg.Model.BaseURL)
		s.ModelName = first(f.modelName, model.Name, os.Getenv(modelNameEnv), cfg.Model.Name)
	}
	if s.ModelURL == "" {
		return s, usagef("no model server: give --model URL, the task's model.base_url or $%s", modelURLEnv)
	}
	if s.MaxResponseBytes, err = byteCap("--max-model-response", f.maxResponse, cfg.Model.MaxResponseBytes, agent.DefaultMaxResponseBytes); err != nil {
		return s, err
	}
	if s.MaxArgumentBytes, err = byteCap("--max-tool-argument", f.maxArgument, cfg.Model.MaxArgumentBytes, agent.DefaultMaxArgumentBytes); err != nil {
		return s, err
	}
	return s, nil
}

func byteCap(flag string, v ...int64) (int64, error) {
	for _, n := range v {
		if n < 0 {
			return 0, usagef("%s %d: want a positive number of bytes", flag, n)
		}
		if n > 0 {
			return n, nil
		}
	}
	return 0, nil
}

func withDefaultApprovals(a agent.Approvals) agent.Approvals {
	d := agent.DefaultApprovals()
	a.FileWrite = first(a.FileWrite, d.FileWrite)
	a.FileDelete = first(a.FileDelete, d.FileDelete)
	a.Terminal = first(a.Terminal, d.Terminal)
	a.NonInteractivePolicy = first(a.NonInteractivePolicy, d.NonInteractivePolicy)
	return a
}

// resumeAgentSettings are a resumed session's settings: the stored ones, narrowed by
// the flags given. A flag that would widen them is refused, naming it.
func resumeAgentSettings(cmd *cobra.Command, g *globals, f agentFlags, stored agent.Settings) (agent.Settings, error) {
	fl := cmd.Flags()
	if fl.Changed("config") {
		return stored, usagef("--config: a session keeps the settings it started with; resume reads no agent config (the session's workspace is %s)", stored.Workspace)
	}
	n := stored
	n.Programs = append([]agent.Program(nil), stored.Programs...)
	n.SecretEnv = append([]string(nil), stored.SecretEnv...)
	if fl.Changed("workspace") {
		dir, err := realDir(f.workspace)
		if err != nil {
			return stored, usagef("--workspace: %v", err)
		}
		n.Workspace = dir
	}
	if fl.Changed("model") {
		n.ModelURL = f.model
	}
	if fl.Changed("model-name") {
		n.ModelName = f.modelName
	}
	if fl.Changed("model-key-env") {
		n.APIKeyEnv = f.keyEnv
	}
	n.AllowedHosts = append(append([]string(nil), stored.AllowedHosts...), f.allowHosts...)
	setProgram := func(name string, readOnly bool) {
		for i := range n.Programs {
			if n.Programs[i].Name == name {
				n.Programs[i].ReadOnly = readOnly
				return
			}
		}
		n.Programs = append(n.Programs, agent.Program{Name: name, ReadOnly: readOnly})
	}
	for _, p := range f.allowReadOnly {
		setProgram(p, true)
	}
	for _, p := range f.allow {
		setProgram(p, false)
	}
	n.Approvals.FileWrite = first(f.fileWrite, n.Approvals.FileWrite)
	n.Approvals.FileDelete = first(f.fileDelete, n.Approvals.FileDelete)
	n.Approvals.Terminal = first(f.terminal, n.Approvals.Terminal)
	n.Approvals.NonInteractivePolicy = first(f.nonInteractive, n.Approvals.NonInteractivePolicy)
	if err := n.Approvals.Validate(); err != nil {
		return stored, usagef("%v", err)
	}
	n.UnsafeCommands = stored.UnsafeCommands || g.UnsafeCommands
	for _, e := range f.secretEnv {
		if !slices.Contains(n.SecretEnv, e) {
			n.SecretEnv = append(n.SecretEnv, e)
		}
	}
	if f.maxResponse != 0 {
		n.MaxResponseBytes = f.maxResponse
	}
	if f.maxArgument != 0 {
		n.MaxArgumentBytes = f.maxArgument
	}
	if n.MaxResponseBytes <= 0 || n.MaxArgumentBytes <= 0 {
		return stored, usagef("--max-model-response, --max-tool-argument: want a positive number of bytes")
	}
	var we *agent.WideningError
	if err := stored.Permits(n); errors.As(err, &we) {
		flag := map[string]string{
			"workspace": "--workspace", "model_url": "--model", "model_name": "--model-name",
			"api_key_env": "--model-key-env", "allowed_hosts": "--allow-model-host", "programs": "--allow",
			"approvals.file_write": "--file-write", "approvals.file_delete": "--file-delete",
			"approvals.terminal": "--terminal", "approvals.non_interactive_policy": "--non-interactive-policy",
			"unsafe_commands": "--unsafe-commands", "max_response_bytes": "--max-model-response",
			"max_argument_bytes": "--max-tool-argument",
		}[we.Field]
		if we.Field == "programs" && slices.ContainsFunc(f.allowReadOnly, func(p string) bool { return we.Asked == p || we.Asked == p+" (read-only)" }) {
			flag = "--allow-read-only"
		}
		return stored, usagef("%s: %s %s is wider than the session's %s: a session keeps the settings it started with (a resume may narrow them, never widen them; start a new session for more)", flag, we.Field, we.Asked, we.Session)
	} else if err != nil {
		return stored, err
	}
	return n, nil
}

// realDir is dir made absolute with its symbolic links resolved.
func realDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(real); err != nil {
		return "", err
	} else if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	return real, nil
}

// defaultAgentConfig is the operator's agent config file: under $XDG_CONFIG_HOME, else
// ~/.config; "" when neither is known.
func defaultAgentConfig() string {
	if d := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "scripthost", "agent.yaml")
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return filepath.Join(h, ".config", "scripthost", "agent.yaml")
	}
	return ""
}

// legacyAgentConfig is where the agent config used to be: inside the workspace, where
// the agent can write it.
const legacyAgentConfig = ".scripthost/agent.yaml"

// loadAgentConfig reads the operator's agent config: --config, else the default
// location. A config that is (or resolves to) a file inside the workspace is refused:
// the agent could write there and widen its own permissions. A config at the old
// place in the workspace is ignored, with a warning.
func loadAgentConfig(g *globals, explicit, wsDir string) (agent.Config, error) {
	if _, err := os.Lstat(filepath.Join(wsDir, legacyAgentConfig)); err == nil {
		fmt.Fprintf(g.Stderr, "scripthost: warning: ignoring %s: the agent can write files in its workspace, so settings there could widen its own permissions; put them in %s or give --config FILE outside the workspace\n",
			filepath.Join(wsDir, legacyAgentConfig), first(defaultAgentConfig(), "$XDG_CONFIG_HOME/scripthost/agent.yaml"))
	}
	path := explicit
	if path == "" {
		if path = defaultAgentConfig(); path == "" {
			return agent.Config{}, nil
		}
	}
	if real := host.ResolvePath(path); host.Within(real, wsDir) {
		_, statErr := os.Stat(path)
		if explicit != "" || statErr == nil {
			what := "--config " + path
			if explicit == "" {
				what = "agent config " + path
			}
			return agent.Config{}, usagef("%s is inside the workspace %s (as %s), where the agent can write it: keep the agent config outside the workspace", what, wsDir, real)
		}
		return agent.Config{}, nil // not there: nothing to read
	}
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return agent.Config{}, usagef("--config: %v", err)
		}
	}
	return agent.LoadConfig(path)
}
