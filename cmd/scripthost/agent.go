package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/scripthost/scripthost/agent"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/codetool"
	"github.com/scripthost/scripthost/hostfuncs/command"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
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
	allowHosts, allow, allowReadOnly    []string
	jsonl, verbose, interactive         bool
	fileWrite, fileDelete, terminal     string
	nonInteractive                      string
	secretEnv                           []string
}

func (f *agentFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&f.model, "model", "", "model server base URL, e.g. http://127.0.0.1:11434/v1 (default: the task's, $"+modelURLEnv+", .scripthost/agent.yaml)")
	fl.StringVar(&f.modelName, "model-name", "", "model name (default: the task's, $"+modelNameEnv+")")
	fl.StringSliceVar(&f.allowHosts, "allow-model-host", nil, "a model server host that is not loopback but allowed")
	fl.StringVar(&f.workspace, "workspace", ".", "the directory the file tools and commands are confined to")
	fl.StringVar(&f.config, "config", "", "agent config file (default WORKSPACE/.scripthost/agent.yaml)")
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
			return runAgent(cmd.Context(), g, rf, t, func(x *agent.Executor) (agent.Result, error) {
				return x.Run(cmd.Context(), args[0], t)
			})
		},
	}
	rf.register(run)
	var sf agentFlags
	resume := &cobra.Command{
		Use: "resume SESSION", Short: "Continue a session after a crash or an approval", Args: cobra.ExactArgs(1),
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
			var t agent.Task
			if err := json.Unmarshal(sess.Spec, &t); err != nil {
				return fmt.Errorf("agent: session %s: stored task: %w", args[0], err)
			}
			return runAgent(cmd.Context(), g, sf, &t, func(x *agent.Executor) (agent.Result, error) {
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
		var by string
		d := &cobra.Command{
			Use: verb + " SESSION CALL", Short: short, Args: cobra.ExactArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error {
				store, err := g.openStore(cmd.Context())
				if err != nil {
					return err
				}
				defer store.Close()
				if err := agent.Decide(cmd.Context(), store, args[0], args[1], approve, approver(by)); err != nil {
					return err
				}
				fmt.Fprintf(g.Stdout, "call %s %sd; run scripthost agent resume %s\n", args[1], verb, args[0])
				return nil
			},
		}
		d.Flags().StringVar(&by, "by", "", "who decides (default $USER)")
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
		limit  int
		asJSON bool
	}
	list := &cobra.Command{
		Use: "list", Short: "List agent sessions, newest first", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if lf.status != "" && !slices.Contains(agent.SessionStatuses, lf.status) {
				return usagef("--status %q: want one of %s", lf.status, strings.Join(agent.SessionStatuses, ", "))
			}
			if lf.limit < 0 {
				return usagef("--limit %d: want 0 (all) or more", lf.limit)
			}
			store, err := g.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer store.Close()
			ss, err := store.(ledger.AgentStore).AgentSessions(cmd.Context(), ledger.AgentSessionFilter{Status: lf.status, Limit: lf.limit})
			if err != nil {
				return err
			}
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
	list.Flags().IntVar(&lf.limit, "limit", 0, "the newest N sessions (0: all)")
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

func runAgent(ctx context.Context, g *globals, f agentFlags, t *agent.Task, start func(*agent.Executor) (agent.Result, error)) error {
	ws, err := workspace.New(f.workspace)
	if err != nil {
		return usagef("--workspace: %v", err)
	}
	defer ws.Close()
	cfgPath := f.config
	if cfgPath == "" {
		cfgPath = filepath.Join(ws.Dir(), ".scripthost", "agent.yaml")
	}
	cfg, err := agent.LoadConfig(cfgPath)
	if err != nil {
		return err
	}
	ap := cfg.Approvals
	ap.FileWrite = first(f.fileWrite, ap.FileWrite)
	ap.FileDelete = first(f.fileDelete, ap.FileDelete)
	ap.Terminal = first(f.terminal, ap.Terminal)
	ap.NonInteractivePolicy = first(f.nonInteractive, ap.NonInteractivePolicy)
	if err := ap.Validate(); err != nil {
		return usagef("%v", err)
	}
	var progs []command.Program
	for _, p := range cfg.Programs {
		progs = append(progs, command.Program{Name: p.Name, ReadOnly: p.ReadOnly})
	}
	for _, n := range f.allow {
		progs = append(progs, command.Program{Name: n})
	}
	for _, n := range f.allowReadOnly {
		progs = append(progs, command.Program{Name: n, ReadOnly: true})
	}
	cmds, err := command.New(command.Config{Workspace: ws, Programs: progs, Unsafe: g.UnsafeCommands, Hide: g.ledgerFiles()})
	if err != nil {
		return usagef("%v", err)
	}
	reg := hostfuncs.NewRegistry()
	if err := reg.Register(append(ws.Tools(), cmds.Tool())...); err != nil {
		return err
	}
	code, err := codetool.New(codetool.Config{Workspace: ws})
	if err != nil {
		return err
	}
	defer code.Close()
	if err := reg.Register(code.PlanTools()...); err != nil {
		return err
	}
	wrapToolFailpoints(reg)

	model := t.Model
	if model == nil {
		model = &agent.ModelConfig{}
	}
	url := first(f.model, model.BaseURL, os.Getenv(modelURLEnv), cfg.Model.BaseURL)
	name := first(f.modelName, model.Name, os.Getenv(modelNameEnv), cfg.Model.Name)
	if url == "" {
		return usagef("no model server: give --model URL, the task's model.base_url or $%s", modelURLEnv)
	}
	keyEnv := first(model.APIKeyEnv, cfg.Model.APIKeyEnv, modelKeyEnv)
	key := os.Getenv(keyEnv)
	redactor := hostfuncs.NewRedactor(key)
	for _, n := range f.secretEnv {
		redactor.AddSecret(os.Getenv(n))
	}
	driver, err := agent.NewOpenAI(agent.OpenAIConfig{BaseURL: url, APIKey: key, AllowedHosts: append(f.allowHosts, cfg.Model.AllowedHosts...)})
	if err != nil {
		return usagef("%v", err)
	}
	store, err := g.createStore(ctx, false)
	if err != nil {
		return err
	}
	defer store.Close()
	o := agent.Options{Store: store, Registry: reg, Driver: driver, Model: name, Workspace: ws, Commands: cmds,
		Approvals: ap, Redactor: redactor, Verbose: f.verbose}
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
