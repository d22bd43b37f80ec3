package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/scripthost/scripthost/host"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/command"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/plan"
)

func init() { commands = append(commands, newPlanCmd) }

func newPlanCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Run approved plans of tool steps and show their evidence",
		Long: `A plan is a JSON list of tool steps that a person approved. "plan run" executes
exactly what was approved, one step at a time, recording every step in the ledger's
execution log; "plan show" reads that evidence back. See docs/plans.md.`,
	}
	cmd.AddCommand(newPlanRunCmd(g), newPlanShowCmd(g), newPlanHashCmd(g), newPlanApproveCmd(g))
	return cmd
}

type planRunFlags struct {
	approve        bool
	by             string
	authorization  string
	workspace      string
	nonInteractive string
	events         string
	jsonl          bool
	allow          []string
	allowReadOnly  []string
	commandTimeout time.Duration
	secretEnv      []string
	fresh          bool
	index          string
}

func newPlanRunCmd(g *globals) *cobra.Command {
	var f planRunFlags
	cmd := &cobra.Command{
		Use:   "run PLAN.json",
		Short: "Execute an approved plan",
		Long: `Execute the plan in PLAN.json. It must be approved, either here with --approve or by
an authorization record (--authorization FILE, see "plan approve") whose plan id and
hash match the file. Every refusal is checked before the first step runs. If the plan's
last execution was interrupted, it is resumed after its last recorded step.

Exit codes: 0 all steps done, 1 refused or general failure, 2 usage, 30 a step failed,
32 sandbox violation, 33 confirmation denied, 34 step timeout.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPlan(cmd.Context(), g, f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.approve, "approve", false, "approve the plan as it is now (recorded as approved by --by)")
	fl.StringVar(&f.by, "by", "", "who approves with --approve (default: the current user)")
	fl.StringVar(&f.authorization, "authorization", "", "authorization record (JSON) approving this plan")
	fl.StringVar(&f.workspace, "workspace", ".", "directory the file tools and commands are confined to")
	fl.StringVar(&f.nonInteractive, "non-interactive", "", "decide confirmations without asking: deny or approve")
	fl.StringVar(&f.events, "events", "", "append the JSONL event stream to FILE")
	fl.BoolVar(&f.jsonl, "jsonl", false, "write the JSONL event stream to stdout (progress goes to stderr)")
	fl.StringSliceVar(&f.allow, "allow", nil, "programs run_command may run (names on PATH)")
	fl.StringSliceVar(&f.allowReadOnly, "allow-read-only", nil, "programs run_command may run that only read (not recorded as mutations)")
	fl.DurationVar(&f.commandTimeout, "command-timeout", command.DefaultTimeout, "default timeout of one command; a call may ask for up to 10m")
	fl.StringSliceVar(&f.secretEnv, "secret-env", nil, "environment variables whose values are secrets to redact")
	fl.BoolVar(&f.fresh, "new", false, "start a new execution even if the last one was interrupted")
	fl.StringVar(&f.index, "index", "", "the code index the code tools use (default codegraph.db in the workspace)")
	return cmd
}

func runPlan(ctx context.Context, g *globals, f planRunFlags, path string) error {
	if f.approve && f.authorization != "" {
		return usagef("give --approve or --authorization, not both")
	}
	if f.nonInteractive != "" && f.nonInteractive != "deny" && f.nonInteractive != "approve" {
		return usagef("--non-interactive must be deny or approve, got %q", f.nonInteractive)
	}
	p, err := readPlan(path)
	if err != nil {
		return err
	}
	var auth *plan.Authorization
	switch {
	case f.approve:
		a := plan.Approve(p, approver(f.by), time.Now())
		auth = &a
	case f.authorization != "":
		b, err := os.ReadFile(f.authorization)
		if err != nil {
			return usagef("%v", err)
		}
		a, err := plan.ParseAuthorizationFile(f.authorization, b)
		if err != nil {
			return err
		}
		auth = &a
	}
	ws, err := workspace.New(f.workspace)
	if err != nil {
		return usagef("--workspace: %v", err)
	}
	defer ws.Close()
	if err := g.keepLedgerOut(f.workspace); err != nil {
		return err
	}
	var progs []command.Program
	for _, n := range f.allow {
		progs = append(progs, command.Program{Name: n})
	}
	for _, n := range f.allowReadOnly {
		progs = append(progs, command.Program{Name: n, ReadOnly: true})
	}
	tools, err := planTools(host.ToolOptions{Workspace: ws, CodeIndex: f.index, PlanTools: true,
		Commands: &command.Config{Programs: progs, DefaultTimeout: f.commandTimeout, Unsafe: g.UnsafeCommands}})
	if err != nil {
		return err
	}
	defer tools.Close()
	reg, cmds, code := tools.Registry, tools.Commands, tools.Code
	redactor := hostfuncs.NewRedactor()
	for _, name := range f.secretEnv {
		redactor.AddSecret(os.Getenv(name))
	}

	out := g.Stdout
	var events io.Writer
	if f.jsonl {
		events, out = g.Stdout, g.Stderr
	}
	if f.events != "" {
		ef, err := os.OpenFile(f.events, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return usagef("--events: %v", err)
		}
		defer ef.Close()
		if events != nil {
			events = io.MultiWriter(events, ef)
		} else {
			events = ef
		}
	}

	store, err := g.createStore(ctx, false)
	if err != nil {
		return err
	}
	defer store.Close()
	x, err := plan.New(plan.Options{
		Store: store, Registry: reg, Workspace: ws, Commands: cmds, Symbols: code, Redactor: redactor,
		Confirm: confirmer(g, f.nonInteractive, redactor), Events: events, Fresh: f.fresh,
		Progress: progressPrinter(out, redactor),
	})
	if err != nil {
		return err
	}
	res, err := x.Run(ctx, p, auth)
	if res != nil {
		status := res.Status
		if res.Resumed {
			status += " (resumed)"
		}
		fmt.Fprintf(out, "plan %s: execution %s %s, %d of %d steps in %dms\n", p.PlanID, res.ExecutionID, status, len(res.Steps), len(p.Steps), res.TotalDurationMS)
	}
	return err
}

// planTools builds the tools of a plan or agent session with host.NewTools; a command
// configuration it refuses is a usage error.
func planTools(opts host.ToolOptions) (*host.Tools, error) {
	tools, err := host.NewTools(opts)
	var ce *host.CommandsError
	if errors.As(err, &ce) {
		return nil, usagef("%v", ce.Err)
	}
	if err != nil {
		return nil, err
	}
	wrapToolFailpoints(tools.Registry)
	return tools, nil
}

// approver is who --approve records: --by, else the current user.
func approver(by string) string {
	if by != "" {
		return by
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "cli"
}

// confirmer returns the confirmation policy: a fixed answer for --non-interactive, or
// a question on stderr answered on stdin (end of input denies).
func confirmer(g *globals, policy string, redactor *hostfuncs.Redactor) plan.ConfirmFunc {
	switch policy {
	case "approve":
		return func(context.Context, *plan.Plan, plan.Step) (bool, error) { return true, nil }
	case "deny":
		return func(context.Context, *plan.Plan, plan.Step) (bool, error) { return false, nil }
	}
	var once sync.Once
	var in *bufio.Reader
	return func(_ context.Context, _ *plan.Plan, s plan.Step) (bool, error) {
		once.Do(func() { in = bufio.NewReader(g.Stdin) })
		fmt.Fprintf(g.Stderr, "step %s (%s) requires confirmation", s.StepID, s.Tool)
		if s.Description != "" {
			fmt.Fprintf(g.Stderr, ": %s", s.Description)
		}
		fmt.Fprintf(g.Stderr, "\n  arguments: %s\nrun it? [y/N] ", redactor.RedactJSON(s.Arguments))
		line, err := in.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return false, err
		}
		answer := strings.ToLower(strings.TrimSpace(line))
		if errors.Is(err, io.EOF) && answer == "" {
			fmt.Fprintln(g.Stderr)
			return false, errors.New("no answer (end of input)")
		}
		return answer == "y" || answer == "yes", nil
	}
}

// progressPrinter prints one line when a step starts and one when it ends.
func progressPrinter(w io.Writer, redactor *hostfuncs.Redactor) plan.Progress {
	return plan.Progress{
		StepStart: func(i plan.StepInfo) {
			fmt.Fprintf(w, "[%d/%d] %s (%s) ...\n", i.Index, i.Total, i.StepID, i.Tool)
		},
		StepComplete: func(r plan.StepResult) {
			fmt.Fprintf(w, "      %s ok\n", r.StepID)
		},
		StepFailed: func(r plan.StepResult) {
			fmt.Fprintf(w, "      %s %s %s: %s\n", r.StepID, r.Status, r.Code, oneLine(redactor.Redact(r.Error), 200))
		},
	}
}

func newPlanShowCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show EXECUTION_ID",
		Short: "Show the evidence of a plan execution",
		Long: `Show the execution records of one step (PLAN/N/STEP), one execution (PLAN/N) or
every execution of a plan (PLAN).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, _, _, err := plan.ParseExecutionID(args[0]); err != nil {
				return usagef("%v", err)
			}
			store, err := g.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer store.Close()
			recs, err := plan.Records(cmd.Context(), store, args[0])
			if err != nil {
				return err
			}
			if len(recs) == 0 {
				return fmt.Errorf("plan: no execution records for %s", args[0])
			}
			if asJSON {
				return printJSON(g.Stdout, recs)
			}
			rows := make([][]string, 0, len(recs))
			for _, r := range recs {
				status := "ok"
				if !r.Success {
					status = "failed " + r.ErrorCode
				}
				rows = append(rows, []string{r.ExecutionID, r.Tool, status, fmt.Sprint(r.ExitCode),
					fmt.Sprintf("%dms", r.DurationMS), r.StartedAt.Format(time.RFC3339), oneLine(r.Error, 60)})
			}
			if err := table(g.Stdout, "EXECUTION\tTOOL\tSTATUS\tEXIT\tDURATION\tSTARTED\tERROR", rows); err != nil {
				return err
			}
			printEvidence(g.Stdout, recs)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the full records as JSON")
	return cmd
}

// readPlan reads and parses a plan file; an unreadable file is a usage error.
func readPlan(path string) (*plan.Plan, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("%v", err)
	}
	return plan.ParseFile(path, raw)
}

func newPlanHashCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "hash PLAN.json",
		Short: "Print the hash an authorization record must name",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := readPlan(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintln(g.Stdout, p.Hash())
			return nil
		},
	}
}

func newPlanApproveCmd(g *globals) *cobra.Command {
	var by, note, out string
	var deny bool
	cmd := &cobra.Command{
		Use:   "approve PLAN.json",
		Short: "Write an authorization record for a plan",
		Long: `Print (or write to --out) an authorization record approving PLAN.json as it is now,
or denying it with --deny. "plan run --authorization FILE" accepts it while the plan
file is unchanged.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := readPlan(args[0])
			if err != nil {
				return err
			}
			a := plan.Approve(p, approver(by), time.Now())
			a.Note = note
			if deny {
				a.Status = plan.StatusDenied
			}
			b, err := json.MarshalIndent(a, "", "  ")
			if err != nil {
				return err
			}
			b = append(b, '\n')
			return recordPlanDecision(cmd.Context(), g, a, func() error {
				if out == "" {
					_, err := g.Stdout.Write(b)
					return err
				}
				return os.WriteFile(out, b, 0o644)
			})
		},
	}
	cmd.Flags().StringVar(&by, "by", "", "who decides (default: the current user)")
	cmd.Flags().StringVar(&note, "note", "", "a note (the reason) kept in the record and the audit trail")
	cmd.Flags().StringVarP(&out, "out", "o", "", "write the record to FILE instead of stdout")
	cmd.Flags().BoolVar(&deny, "deny", false, "record a denial instead of an approval")
	return cmd
}

// printEvidence prints what the table leaves out: the plan's intent and the checker
// diagnostics each step kept.
func printEvidence(w io.Writer, recs []ledger.ExecutionRecord) {
	intent := ""
	for _, r := range recs {
		var d plan.Diagnostics
		if json.Unmarshal(r.Diagnostics, &d) != nil {
			continue
		}
		if d.Intent != "" && d.Intent != intent {
			intent = d.Intent
			fmt.Fprintf(w, "intent: %s\n", oneLine(intent, 200))
		}
		for _, a := range d.Artifacts {
			if a.Kind != plan.ArtifactDiagnostic {
				continue
			}
			fmt.Fprintf(w, "%s: %s:%d:%d: %s %s: %s (%s)\n", r.StepID, a.File, a.Line, a.Column, a.Level, a.Code, oneLine(a.Message, 200), a.Checker)
		}
	}
}

// recordPlanDecision writes a plan's authorization record (write) as an operator action
// in the ledger's audit trail: plan_approve or plan_deny, by whom, with the plan's hash
// and the note as its reason. Without a ledger the record is still written, and the
// operator is told that no audit trail has it.
func recordPlanDecision(ctx context.Context, g *globals, a plan.Authorization, write func() error) error {
	name := "plan_approve"
	if a.Status == plan.StatusDenied {
		name = "plan_deny"
	}
	store, err := g.openStore(ctx)
	if errors.Is(err, errNoLedger) {
		if err := write(); err != nil {
			return err
		}
		fmt.Fprintf(g.Stderr, "note: %s of %s is not in an audit trail: %v\n", name, a.PlanID, err)
		return nil
	}
	if err != nil {
		return err
	}
	defer store.Close()
	req := map[string]string{"plan_hash": a.PlanHash, "reason": a.Note}
	_, err = recordCLI(ctx, store, name, a.PlanID, a.By, req, func(context.Context) (any, error) {
		if err := write(); err != nil {
			return nil, err
		}
		return a, nil
	})
	return err
}
