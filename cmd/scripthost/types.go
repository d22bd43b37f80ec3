package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/host"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/command"
	"github.com/scripthost/scripthost/hostfuncs/httptool"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
	"github.com/scripthost/scripthost/sandbox/js/dts"
)

func init() { commands = append(commands, newTypesCmd) }

func newTypesCmd(g *globals) *cobra.Command {
	var toolsFile, out string
	cmd := &cobra.Command{
		Use:   "types [--tools FILE] [--out FILE]",
		Short: "Generate TypeScript declarations for the tools a workflow can call",
		Long: `Print TypeScript declarations for the tools a workflow run with these flags can call:
the Files.* and plan.* tools, and the HTTP tools declared in --tools, each typed from
its input and output JSON Schemas, so that Shop.charge({...}) is type-checked. Put the
output beside the workflow (tools.d.ts) with the sandbox's own declarations, which
scripthost init --ts writes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			src, err := toolDeclarations(toolsFile)
			if err != nil {
				return err
			}
			if out == "" {
				_, err := g.Stdout.Write(src)
				return err
			}
			if err := os.WriteFile(out, src, 0o644); err != nil {
				return usagef("--out: %v", err)
			}
			fmt.Fprintf(g.Stderr, "wrote %s\n", out)
			return nil
		},
	}
	cmd.Flags().StringVar(&toolsFile, "tools", "", "HTTP tools declared in a JSON or YAML file")
	cmd.Flags().StringVar(&out, "out", "", "write the declarations to this file instead of stdout")
	return cmd
}

// callableTools returns the tools a workflow run with --tools toolsFile can call,
// except the topic tools, which scripthost.d.ts declares. Only their names and schemas
// are used: no secret needs to be set.
func callableTools(toolsFile string) ([]*hostfuncs.Tool, error) {
	ws, err := workspace.New(os.TempDir())
	if err != nil {
		return nil, fmt.Errorf("types: %w", err)
	}
	defer ws.Close()
	// A workflow's tools, as a host with a workspace and commands registers them.
	builtin, err := host.NewTools(host.ToolOptions{Workspace: ws, Commands: &command.Config{}})
	if err != nil {
		return nil, fmt.Errorf("types: %w", err)
	}
	defer builtin.Close()
	tools := builtin.Registry.Tools()
	if toolsFile != "" {
		if _, err := os.Stat(toolsFile); err != nil {
			return nil, usagef("--tools: %v", err)
		}
		// Any value long enough to pass as a secret: the requests are never sent.
		placeholder := func(string) (string, bool) { return "placeholder-secret", true }
		http, err := httptool.Load(toolsFile, placeholder)
		if err != nil {
			return nil, usageError{err: err}
		}
		tools = append(tools, http...)
	}
	return tools, nil
}

// toolDeclarations generates tools.d.ts for the tools callableTools returns.
func toolDeclarations(toolsFile string) ([]byte, error) {
	tools, err := callableTools(toolsFile)
	if err != nil {
		return nil, err
	}
	decls := make([]dts.Tool, 0, len(tools))
	for _, t := range tools {
		decls = append(decls, dts.Tool{Namespace: t.Namespace, Method: t.Method, Description: t.Description,
			Input: t.InputSchema, Output: t.OutputSchema, ReadOnly: readOnly(t)})
	}
	src, err := dts.Generate(decls)
	if err != nil {
		return nil, fmt.Errorf("types: %w", err)
	}
	return src, nil
}

// readOnly reports whether a tool declares itself read-only for an empty input; a
// predicate that panics counts as a mutation, as it does at run time.
func readOnly(t *hostfuncs.Tool) (ro bool) {
	defer func() {
		if recover() != nil {
			ro = false
		}
	}()
	return t.Classify(json.RawMessage(`{}`)) == scripthost.OpRead
}

// tsconfig is the compiler configuration init --ts writes beside a workflow.
const tsconfig = `{
  "compilerOptions": {
    "target": "ES2022",
    "lib": ["ES2022"],
    "module": "ESNext",
    "moduleResolution": "bundler",
    "strict": true,
    "noEmit": true,
    "types": []
  },
  "include": ["*.ts"]
}
`

// declarationFiles returns every file that types a workflow: the sandbox's own
// declarations (every file of dts.FS) and tools.d.ts for the tools.
func declarationFiles(toolsFile string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := fs.WalkDir(dts.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(dts.FS, p)
		files[p] = b
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("types: %w", err)
	}
	if files["tools.d.ts"], err = toolDeclarations(toolsFile); err != nil {
		return nil, err
	}
	return files, nil
}

// errNoCompiler: there is no TypeScript compiler to type-check with.
var errNoCompiler = errors.New("no TypeScript compiler (tsc) on PATH: install one with npm install -g typescript")

// tscDiagnostic matches tsc's --pretty false output: file(line,col): error TSnnnn: text.
var tscDiagnostic = regexp.MustCompile(`^(.+?)\((\d+),(\d+)\): error (TS\d+): (.*)$`)

// typeCheck type-checks a TypeScript workflow with tsc against the sandbox's
// declarations and the tools'. When the workflow's directory or an ancestor has a
// tsconfig.json, the check covers that project as tsc -p would (projectCheck);
// otherwise the workflow is checked alone in a scratch directory. Type errors come back
// as one logic error (code type_error) listing each at its file, line and column.
func typeCheck(ctx context.Context, path string, src []byte, toolsFile string) error {
	tsc, err := exec.LookPath("tsc")
	if err != nil {
		return errNoCompiler
	}
	files, err := declarationFiles(toolsFile)
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("types: %w", err)
	}
	config, err := findTSConfig(filepath.Dir(abs))
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "scripthost-tsc-")
	if err != nil {
		return fmt.Errorf("types: %w", err)
	}
	defer os.RemoveAll(dir)
	if config != "" {
		return projectCheck(ctx, tsc, dir, path, config, files)
	}
	return scratchCheck(ctx, tsc, dir, path, src, files)
}

// scratchCheck type-checks a workflow alone: it, the declarations and a tsconfig.json
// are written into dir and checked there.
func scratchCheck(ctx context.Context, tsc, dir, path string, src []byte, files map[string][]byte) error {
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)) + ".ts"
	files[base] = src
	// Untyped parameters are allowed here, so a workflow written like JavaScript passes;
	// the tsconfig.json init writes is stricter, for the editor.
	files["tsconfig.json"] = []byte(strings.Replace(tsconfig, `"strict": true,`, `"strict": true,
    "noImplicitAny": false,`, 1))
	if err := writeFiles(dir, files); err != nil {
		return err
	}
	out, runErr := runTSC(ctx, tsc, dir, "-p", dir)
	problems, config := diagnostics(out, func(file string) string {
		if filepath.Base(file) == base {
			return path
		}
		return "(declarations) " + filepath.Base(file)
	})
	return typeErrors(append(config, problems...), runErr, out)
}

// writeFiles writes each file of files into dir.
func writeFiles(dir string, files map[string][]byte) error {
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("types: %w", err)
		}
	}
	return nil
}

// runTSC runs tsc with args and plain diagnostics in dir, and returns what it printed.
func runTSC(ctx context.Context, tsc, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, tsc, append(args, "--pretty", "false")...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// diagnostics returns tsc's errors in out as "file:line:col: TSnnnn text", naming each
// file as name says; an error without a file (an option tsc refuses) is kept as it is.
// Errors in the configuration (a .json file, or none) come back apart from the others.
func diagnostics(out string, name func(file string) string) (problems, config []string) {
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if m := tscDiagnostic.FindStringSubmatch(line); m != nil {
			p := fmt.Sprintf("%s:%s:%s: %s %s", name(m[1]), m[2], m[3], m[4], m[5])
			if strings.EqualFold(filepath.Ext(m[1]), ".json") {
				config = append(config, p)
			} else {
				problems = append(problems, p)
			}
		} else if strings.HasPrefix(line, "error TS") {
			config = append(config, line)
		}
	}
	return problems, config
}

// typeErrors turns tsc's diagnostics into the type_error validate reports, or tsc's
// output into an error when it failed without any.
func typeErrors(problems []string, runErr error, out string) error {
	switch {
	case len(problems) > 0:
		return scripthost.Errorf(scripthost.ClassLogic, "type_error", "type errors:\n  %s", strings.Join(problems, "\n  "))
	case runErr != nil:
		return fmt.Errorf("tsc: %v: %s", runErr, strings.TrimSpace(out))
	}
	return nil
}
