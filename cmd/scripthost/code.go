package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/scripthost/scripthost/codegraph"
	"github.com/scripthost/scripthost/hostfuncs/codetool"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
	"github.com/scripthost/scripthost/plan"
)

func init() { commands = append(commands, newCodeCmd) }

// codeFlags are shared by the code subcommands.
type codeFlags struct {
	dir    string
	index  string
	asJSON bool
}

func newCodeCmd(g *globals) *cobra.Command {
	var f codeFlags
	cmd := &cobra.Command{
		Use:   "code",
		Short: "Index a source tree and query its symbols and references",
		Long: `The code index (codegraph.db in the directory, or --index FILE) holds the symbols
and references of the Go, Rust, JavaScript, TypeScript and Python files of a tree,
parsed with tree-sitter. "code index" builds or refreshes it (only files whose content
changed are parsed again); the queries refresh the files they read first. Plans and
agents use the same index through symbols_in_file, references_to_symbol_name,
references_from_file_to_symbol_name, splice_patch, splice_plan and lsp_check. See
docs/code-tools.md.`,
	}
	cmd.PersistentFlags().StringVar(&f.dir, "dir", ".", "root of the source tree")
	cmd.PersistentFlags().StringVar(&f.index, "index", "", "the index file (default DIR/codegraph.db)")
	cmd.PersistentFlags().BoolVar(&f.asJSON, "json", false, "print JSON")
	cmd.AddCommand(
		&cobra.Command{
			Use:   "index [DIR]",
			Short: "Build or refresh the code index of DIR",
			Args:  cobra.MaximumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				if len(args) == 1 {
					f.dir = args[0]
				}
				return withGraph(cmd.Context(), f, func(gr *codegraph.Graph) error {
					st, err := gr.Index(cmd.Context())
					if err != nil {
						return err
					}
					if f.asJSON {
						return printJSON(g.Stdout, st)
					}
					fmt.Fprintf(g.Stdout, "indexed %s into %s: %d files, %d parsed, %d unchanged, %d removed, %d symbols, %d references in %s\n",
						gr.Root(), gr.Path(), st.Files, st.Parsed, st.Unchanged, st.Removed, st.Symbols, st.Refs, st.Duration.Round(1e6))
					return nil
				})
			},
		},
		&cobra.Command{
			Use:   "symbols FILE",
			Short: "List the symbols FILE defines",
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return withGraph(cmd.Context(), f, func(gr *codegraph.Graph) error {
					if _, err := gr.Refresh(cmd.Context(), args[0]); err != nil {
						return err
					}
					file := args[0]
					if !filepath.IsAbs(file) {
						file = filepath.Join(gr.Root(), file)
					}
					if fi, err := os.Stat(file); err != nil {
						return fmt.Errorf("code symbols: %s: no such file under %s", args[0], gr.Root())
					} else if fi.IsDir() {
						return fmt.Errorf("code symbols: %s is a directory", args[0])
					}
					syms, err := gr.Symbols(cmd.Context(), args[0])
					if err != nil {
						return err
					}
					if f.asJSON {
						return printJSON(g.Stdout, syms)
					}
					rows := make([][]string, len(syms))
					for i, s := range syms {
						rows[i] = []string{s.QualifiedName(), s.Kind, fmt.Sprintf("%s:%d-%d", s.Path, s.StartLine, s.EndLine)}
					}
					return table(g.Stdout, "SYMBOL\tKIND\tWHERE", rows)
				})
			},
		},
		newCodeRefsCmd(g, &f),
		newCodeCheckCmd(g, &f),
	)
	return cmd
}

func newCodeRefsCmd(g *globals, f *codeFlags) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "refs NAME",
		Short: "List the references to NAME (in --file only, when given)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return withGraph(ctx, *f, func(gr *codegraph.Graph) error {
				var refs []codegraph.Ref
				var err error
				if file != "" {
					if _, err = gr.Refresh(ctx, file); err == nil {
						refs, err = gr.ReferencesFrom(ctx, file, args[0])
					}
				} else if _, err = gr.Index(ctx); err == nil {
					refs, err = gr.References(ctx, args[0])
				}
				if err != nil {
					return err
				}
				if f.asJSON {
					return printJSON(g.Stdout, refs)
				}
				rows := make([][]string, len(refs))
				for i, r := range refs {
					rows[i] = []string{fmt.Sprintf("%s:%d:%d", r.Path, r.StartLine, r.StartCol), r.Name}
				}
				return table(g.Stdout, "WHERE\tNAME", rows)
			})
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "only references in this file")
	return cmd
}

func newCodeCheckCmd(g *globals, f *codeFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "check [PATH]",
		Short: "Run the checker of the project holding PATH and print its diagnostics",
		Long: `Run the project's checker as lsp_check does: go build and go vet for a go.mod,
cargo check for a Cargo.toml, tsc --noEmit for a tsconfig.json or package.json. Exits
30 when the project has errors, 1 when no checker can run.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := "."
			if len(args) == 1 {
				p = args[0]
			}
			ws, err := workspace.New(f.dir)
			if err != nil {
				return usagef("--dir: %v", err)
			}
			defer ws.Close()
			tools, err := codetool.New(codetool.Config{Workspace: ws, Index: f.index})
			if err != nil {
				return err
			}
			defer tools.Close()
			res, err := tools.Check(cmd.Context(), p)
			if err != nil {
				return err
			}
			if f.asJSON {
				if err := printJSON(g.Stdout, res); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(g.Stdout, "%s in %s: %s, %s\n", res.Checker, res.Project, count(res.Errors, "error"), count(res.Warnings, "warning"))
				for _, d := range res.Diagnostics {
					fmt.Fprintf(g.Stdout, "%s:%d:%d: %s %s: %s\n", d.File, d.Line, d.Column, d.Level, d.Code, d.Message)
				}
				if res.Stderr != "" {
					fmt.Fprintln(g.Stdout, res.Stderr)
				}
			}
			if !res.OK {
				return checkFailed{errors: res.Errors, exit: res.ExitCode}
			}
			return nil
		},
	}
}

// withGraph opens the index of f.dir for the length of fn.
func withGraph(ctx context.Context, f codeFlags, fn func(*codegraph.Graph) error) error {
	if fi, err := os.Stat(f.dir); err != nil || !fi.IsDir() {
		return usagef("%s is not a directory", f.dir)
	}
	index := f.index
	if index != "" {
		if abs, err := filepath.Abs(index); err == nil {
			index = abs
		}
	}
	gr, err := codegraph.Open(ctx, f.dir, index)
	if err != nil {
		return err
	}
	defer gr.Close()
	return fn(gr)
}

// checkFailed is a project the checker found errors in: exit code 30, as a failed plan
// step.
type checkFailed struct{ errors, exit int }

func (e checkFailed) Error() string {
	return fmt.Sprintf("code: the checker reported %s (exit code %d)", count(e.errors, "error"), e.exit)
}

func (checkFailed) ExitCode() int { return plan.ExitStepFailed }

// count says "1 error", "2 errors".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
