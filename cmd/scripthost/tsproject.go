package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/scripthost/scripthost"
)

// findTSConfig returns the tsconfig.json that governs files in dir, looking in dir and
// then its ancestors as tsc does, but no higher than a repository root (a directory
// holding .git); "" when there is none.
func findTSConfig(dir string) (string, error) {
	for {
		p := filepath.Join(dir, "tsconfig.json")
		switch fi, err := os.Stat(p); {
		case err == nil && !fi.IsDir():
			return p, nil
		case err != nil && !os.IsNotExist(err):
			return "", fmt.Errorf("types: %w", err)
		}
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return "", nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", nil
		}
		dir = parent
	}
}

// resolvedConfig is the part of tsc --showConfig's output projectCheck reads.
type resolvedConfig struct {
	CompilerOptions map[string]json.RawMessage `json:"compilerOptions"`
	Files           []string                   `json:"files"`
}

// projectCheck type-checks the project of config as tsc -p would, with the sandbox's
// declarations (decls, written into dir) added. The user's project is left as it is: a
// tsconfig.json in dir extends config, lists the project's files and the declarations,
// and only turns emitting off. A project file with the name of one of the sandbox's
// declaration files (the copies init --ts writes) is left out, so the current ones are
// used. Diagnostics name a project file relative to the workflow's directory, as
// path names it.
func projectCheck(ctx context.Context, tsc, dir, path, config string, decls map[string][]byte) error {
	if err := writeFiles(dir, decls); err != nil {
		return err
	}
	wfAbs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("types: %w", err)
	}
	name := projectFileName(dir, path, wfAbs)
	resolved, err := showConfig(ctx, tsc, dir, config, name)
	if err != nil {
		return err
	}
	gen, err := checkConfig(config, wfAbs, dir, resolved, decls)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tsconfig.json"), gen, 0o644); err != nil {
		return fmt.Errorf("types: %w", err)
	}
	out, runErr := runTSC(ctx, tsc, dir, "-p", dir)
	problems, inConfig := diagnostics(out, name)
	if len(inConfig) > 0 {
		// A syntax error tsc --showConfig let through: the type errors that follow
		// from a half-read configuration are not the user's.
		return configError(name(config), inConfig)
	}
	return typeErrors(problems, runErr, out)
}

// configError is the tsconfig_error validate reports for the errors in the
// configuration named file.
func configError(file string, problems []string) error {
	return scripthost.Errorf(scripthost.ClassLogic, "tsconfig_error", "%s is invalid:\n  %s", file, strings.Join(problems, "\n  "))
}

// projectFileName returns how a diagnostic names a file tsc, run in dir, printed: the
// workflow as path, a declaration of the sandbox's by its name, any other file
// relative to the workflow's directory.
func projectFileName(dir, path, wfAbs string) func(string) string {
	return func(file string) string {
		if !filepath.IsAbs(file) {
			file = filepath.Join(dir, file)
		}
		switch {
		case file == wfAbs:
			return path
		case filepath.Dir(file) == dir:
			return "(declarations) " + filepath.Base(file)
		}
		rel, err := filepath.Rel(filepath.Dir(wfAbs), file)
		if err != nil {
			return file
		}
		return filepath.Join(filepath.Dir(path), rel)
	}
}

// showConfig returns the configuration tsc resolves from config (extends followed,
// include patterns expanded into files). An error in it comes back as a tsconfig_error
// at its file, line and column.
func showConfig(ctx context.Context, tsc, dir, config string, name func(string) string) (resolvedConfig, error) {
	var rc resolvedConfig
	out, runErr := runTSC(ctx, tsc, dir, "-p", config, "--showConfig")
	if runErr != nil {
		var problems []string
		found, inConfig := diagnostics(out, name)
		for _, p := range append(inConfig, found...) {
			// No inputs matched include: the workflow is added to the files anyway.
			if !strings.Contains(p, "TS18003") {
				problems = append(problems, p)
			}
		}
		if len(problems) > 0 {
			return rc, configError(name(config), problems)
		}
		if !strings.Contains(out, "TS18003") {
			return rc, fmt.Errorf("tsc --showConfig %s: %v: %s", config, runErr, strings.TrimSpace(out))
		}
		return rc, nil
	}
	if err := json.Unmarshal([]byte(out), &rc); err != nil {
		return rc, fmt.Errorf("tsc --showConfig %s: unexpected output: %w", config, err)
	}
	return rc, nil
}

// checkConfig returns the tsconfig.json projectCheck runs tsc with: it extends config
// (so the user's options, paths and base URL stay in force, resolved from where they
// are written) and lists the project's files, the workflow and the declarations in
// dir by absolute path.
func checkConfig(config, wfAbs, dir string, resolved resolvedConfig, decls map[string][]byte) ([]byte, error) {
	base := filepath.Dir(config)
	var files []string
	seen := map[string]bool{}
	add := func(f string) {
		if !seen[f] {
			seen[f] = true
			files = append(files, f)
		}
	}
	for _, f := range resolved.Files {
		if !filepath.IsAbs(f) {
			f = filepath.Join(base, f)
		}
		if _, ours := decls[filepath.Base(f)]; !ours {
			add(filepath.Clean(f))
		}
	}
	add(wfAbs)
	for n := range decls {
		add(filepath.Join(dir, n))
	}
	options := map[string]any{"noEmit": true, "incremental": false, "composite": false, "emitDeclarationOnly": false}
	if _, set := resolved.CompilerOptions["typeRoots"]; !set {
		// tsc looks for node_modules/@types from the directory of the config it runs;
		// name the ones the user's config would find.
		options["typeRoots"] = typeRoots(base)
	}
	b, err := json.MarshalIndent(map[string]any{
		"extends":         config,
		"compilerOptions": options,
		"files":           files,
		"include":         []string{},
	}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("types: %w", err)
	}
	return b, nil
}

// typeRoots returns every node_modules/@types directory in dir and its ancestors,
// nearest first: where tsc finds type packages for a project in dir.
func typeRoots(dir string) []string {
	roots := []string{}
	for {
		p := filepath.Join(dir, "node_modules", "@types")
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			roots = append(roots, p)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return roots
		}
		dir = parent
	}
}
