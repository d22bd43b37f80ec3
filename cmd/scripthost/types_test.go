package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// needTSC skips a test that type-checks when no TypeScript compiler is installed
// (.ci/run installs one, so the test runs there).
func needTSC(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tsc"); err != nil {
		t.Skip("tsc not on PATH (npm install -g typescript): the type check cannot run here")
	}
}

const shopTools = `tools:
  - namespace: Shop
    method: charge
    url: http://127.0.0.1:1/charges
    http_method: POST
    input_schema: {type: object, required: [amount], properties: {amount: {type: integer}, currency: {enum: [eur, usd]}}}
    output_schema: {type: object, required: [id], properties: {id: {type: string}}}
`

func TestTypesCommand(t *testing.T) {
	tools := putFile(t, filepath.Join(t.TempDir(), "tools.yaml"), shopTools)
	code, out, errOut := runCLI(t, "types", "--tools", tools)
	if code != 0 {
		t.Fatalf("types: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"declare const Shop: {", "charge(input: {", "amount: number;", `currency?: "eur" | "usd";`,
		"}): Promise<{\n    id: string;\n  }>;", "declare const Files: {", "declare const plan: {"} {
		if !strings.Contains(out, want) {
			t.Errorf("types output lacks %q:\n%s", want, out)
		}
	}
	outFile := filepath.Join(t.TempDir(), "tools.d.ts")
	if code, _, errOut := runCLI(t, "types", "--tools", tools, "--out", outFile); code != 0 {
		t.Fatalf("types --out: exit %d: %s", code, errOut)
	}
	if b, _ := os.ReadFile(outFile); string(b) != out {
		t.Error("--out wrote something else than stdout shows")
	}
	// Secrets need not be set to generate the declarations, in headers or URLs.
	secretTools := putFile(t, filepath.Join(t.TempDir(), "secret.yaml"), strings.Replace(shopTools,
		"url: http://127.0.0.1:1/charges", "url: http://127.0.0.1:1/${TYPES_TEST_HOOK}/charges\n    headers: {Authorization: 'Bearer ${TYPES_TEST_KEY}'}", 1))
	if code, out2, errOut := runCLI(t, "types", "--tools", secretTools); code != 0 || out2 != out {
		t.Errorf("types with unset secrets: exit %d %q, want the same declarations", code, errOut)
	}
	if code, _, errOut := runCLI(t, "types", "--tools", filepath.Join(t.TempDir(), "none.yaml")); code != 2 || !strings.Contains(errOut, "none.yaml") {
		t.Errorf("missing tools file: got exit %d %q, want 2 naming it", code, errOut)
	}
}

// The TypeScript scaffold type-checks under its own strict tsconfig.json, with every
// declaration file the sandbox ships.
func TestInitTSTypeChecks(t *testing.T) {
	needTSC(t)
	dir := filepath.Join(t.TempDir(), "hello")
	if code, _, errOut := runCLI(t, "init", dir, "--ts"); code != 0 {
		t.Fatalf("init --ts: exit %d: %s", code, errOut)
	}
	for _, f := range []string{"scripthost.d.ts", "tools.d.ts", "tsconfig.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("init --ts did not write %s: %v", f, err)
		}
	}
	cmd := exec.Command("tsc", "-p", dir, "--pretty", "false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("tsc -p on the scaffold: %v\n%s", err, out)
	}
	code, out, errOut := runCLI(t, "validate", filepath.Join(dir, "workflow.ts"))
	if code != 0 || !strings.Contains(out, "types ok") {
		t.Errorf("validate: got exit %d %q %q, want 0 and types ok", code, out, errOut)
	}
}

// A type error is reported at its .ts line and column, and so is a wrong input to an
// HTTP tool.
func TestValidateReportsTypeErrors(t *testing.T) {
	needTSC(t)
	dir := t.TempDir()
	tools := putFile(t, filepath.Join(dir, "tools.yaml"), shopTools)
	wf := putFile(t, filepath.Join(dir, "workflow.ts"), `export default {
  topics: ['orders'],
  consumers: { bill: { subscribe: ['orders'],
    async prepare() { return null; },
    async mutate() {
      const n: number = "x";
      await Shop.charge({ amount: 'ten' });
    } } },
} satisfies Workflow;
`)
	code, _, errOut := runCLI(t, "validate", wf, "--tools", tools)
	if code != 3 || !strings.Contains(errOut, wf+":6:13: TS2322") || !strings.Contains(errOut, wf+":7:27: TS2322") {
		t.Errorf("got exit %d %q, want 3 with both errors at their .ts line and column", code, errOut)
	}
	// Without --tools, Shop is unknown to the compiler.
	if code, _, errOut := runCLI(t, "validate", wf); code != 3 || !strings.Contains(errOut, "Cannot find name 'Shop'") {
		t.Errorf("without --tools: got exit %d %q, want Shop unknown", code, errOut)
	}
	if code, out, _ := runCLI(t, "validate", wf, "--no-typecheck"); code != 0 || strings.Contains(out, "types ok") {
		t.Errorf("--no-typecheck: got exit %d %q, want 0 without a type check", code, out)
	}
}

// Without a compiler, validate still checks the definition and says the type check
// was skipped.
func TestValidateWithoutCompiler(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	wf := putFile(t, filepath.Join(t.TempDir(), "workflow.ts"), "const n: number = 1;\nexport default { topics: ['a'], consumers: { c: { subscribe: ['a'], prepare() { return null; } } } };\n")
	code, out, errOut := runCLI(t, "validate", wf)
	if code != 0 || !strings.Contains(out, ": ok:") || !strings.Contains(errOut, "type check skipped: no TypeScript compiler (tsc) on PATH") {
		t.Errorf("got exit %d %q %q, want 0 and a clear skip", code, out, errOut)
	}
}

// A runtime error in TypeScript points at the .ts column, past the type annotations
// that compiling removed from the same line.
func TestTypeScriptRuntimeErrorColumn(t *testing.T) {
	dir := t.TempDir()
	wf := putFile(t, filepath.Join(dir, "wf", "cols.ts"), `export default {
  topics: ['a'],
  producers: { p: { schedule: { every: '1h' },
    async handler(state: { n?: number } | undefined) {
      const z: number = 1; if (z as number) throw new Error('boom');
      return {};
    } } },
};
`)
	code, _, errOut := runCLI(t, "--db", filepath.Join(dir, "l.db"), "run", wf, "--once")
	if code != exitBlocked || !strings.Contains(errOut, "cols.ts:5:51: Error: boom") {
		t.Errorf("got exit %d %q, want the error at cols.ts:5:51 (new Error)", code, errOut)
	}
}

// tsProject writes a TypeScript project beside a workflow: a tsconfig.json with a paths
// alias, a module the workflow imports types from, an ambient declaration file (not
// beside types.ts, whose types.d.ts tsc would take for its output and leave out), an npm
// package with its own types and a type package under node_modules/@types. It returns
// the project's directory.
func tsProject(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "proj")
	putFile(t, filepath.Join(dir, "tsconfig.json"), `{
  // the editor's settings
  "compilerOptions": {
    "target": "ES2022", "lib": ["ES2022"], "module": "ESNext", "moduleResolution": "bundler",
    "strict": true, "noEmit": true, "baseUrl": ".",
    "paths": { "@lib/*": ["lib/*"] },
  },
  "include": ["**/*.ts"],
}
`)
	putFile(t, filepath.Join(dir, "types.ts"), "export type Order = { id: string; cents: number };\n")
	putFile(t, filepath.Join(dir, "typings", "types.d.ts"), "declare type Currency = 'eur' | 'usd';\n")
	putFile(t, filepath.Join(dir, "lib", "money.ts"), "export type Money = { cents: number; currency: Currency };\n")
	putFile(t, filepath.Join(dir, "node_modules", "ledgerkit", "package.json"), `{"name": "ledgerkit", "version": "1.0.0", "types": "index.d.ts"}`)
	putFile(t, filepath.Join(dir, "node_modules", "ledgerkit", "index.d.ts"), "export interface Entry { order: string }\n")
	putFile(t, filepath.Join(dir, "node_modules", "@types", "regionconf", "index.d.ts"), "declare const REGION: string;\n")
	return dir
}

// projectWorkflow uses every kind of declaration tsProject writes, and the sandbox's.
const projectWorkflow = `import type { Order } from './types';
import type { Money } from '@lib/money';
import type { Entry } from 'ledgerkit';

export default {
  topics: ['orders'],
  consumers: { bill: { subscribe: ['orders'],
    async prepare() {
      const o: Order = { id: 'o1', cents: 100 };
      const m: Money = { cents: o.cents, currency: 'eur' };
      const e: Entry = { order: o.id };
      await Files.read({ path: REGION });
      return m.cents > 0 && e.order ? null : null;
    } } },
} satisfies Workflow;
`

// A workflow in a project with a tsconfig.json is checked as tsc -p checks it: its
// type imports, a sibling declaration file, a paths alias, an npm package's types and
// node_modules/@types all resolve, and the sandbox's declarations are added. Checked
// alone, the same workflow fails.
func TestValidateTypeChecksProject(t *testing.T) {
	needTSC(t)
	dir := tsProject(t)
	wf := putFile(t, filepath.Join(dir, "workflow.ts"), projectWorkflow)
	code, out, errOut := runCLI(t, "validate", wf)
	if code != 0 || !strings.Contains(out, "types ok") {
		t.Fatalf("validate in a project: got exit %d %q %q, want 0 and types ok", code, out, errOut)
	}
	alone := putFile(t, filepath.Join(t.TempDir(), "workflow.ts"), projectWorkflow)
	if code, _, errOut := runCLI(t, "validate", alone); code != 3 || !strings.Contains(errOut, "Cannot find module './types'") {
		t.Errorf("validate alone: got exit %d %q, want the imports unresolved", code, errOut)
	}
	for _, f := range []string{"scripthost.d.ts", "tools.d.ts", "web.d.ts", "tsconfig.tsbuildinfo"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("validate wrote %s into the project", f)
		}
	}
}

// A type error in a module the workflow imports is reported at that module's file,
// line and column, relative to the workflow's directory, and the workflow's own at its
// path; the user's strict settings stay in force.
func TestValidateProjectReportsImportedErrors(t *testing.T) {
	needTSC(t)
	dir := tsProject(t)
	putFile(t, filepath.Join(dir, "lib", "money.ts"), "export type Money = { cents: number; currency: Currency };\n\nexport const zero: Money = { cents: '0', currency: 'eur' };\n")
	wf := putFile(t, filepath.Join(dir, "flows", "workflow.ts"), strings.Replace(projectWorkflow, "'./types'", "'../types'", 1)+
		"export function untyped(x) { return x; }\n")
	code, _, errOut := runCLI(t, "validate", wf)
	moneyAt := filepath.Join(dir, "flows", "..", "lib", "money.ts")
	if code != 3 || !strings.Contains(errOut, filepath.Clean(moneyAt)+":3:30: TS2322") {
		t.Errorf("got exit %d %q, want the error at %s:3:30", code, errOut, moneyAt)
	}
	if !strings.Contains(errOut, wf+":16:25: TS7006") {
		t.Errorf("got %q, want the project's noImplicitAny at %s:16:25", errOut, wf)
	}
	// Named relative to the working directory as the workflow is.
	t.Chdir(filepath.Join(dir, "flows"))
	if code, _, errOut := runCLI(t, "validate", "workflow.ts"); code != 3 || !strings.Contains(errOut, "\n  ../lib/money.ts:3:30: TS2322") {
		t.Errorf("relative: got exit %d %q, want ../lib/money.ts:3:30", code, errOut)
	}
}

// The project's copies of the sandbox's declarations (init --ts writes them) give way to
// validate's own, so a stale tools.d.ts neither hides nor duplicates the tools of
// --tools.
func TestValidateProjectOwnDeclarations(t *testing.T) {
	needTSC(t)
	dir := filepath.Join(t.TempDir(), "hello")
	if code, _, errOut := runCLI(t, "init", dir, "--ts"); code != 0 {
		t.Fatalf("init --ts: exit %d: %s", code, errOut)
	}
	tools := putFile(t, filepath.Join(t.TempDir(), "tools.yaml"), shopTools)
	wf := putFile(t, filepath.Join(dir, "charge.ts"), `export default {
  topics: ['orders'],
  consumers: { bill: { subscribe: ['orders'],
    async prepare() { return null; },
    async mutate() { return await Shop.charge({ amount: 10 }); } } },
} satisfies Workflow;
`)
	if code, out, errOut := runCLI(t, "validate", wf, "--tools", tools); code != 0 || !strings.Contains(out, "types ok") {
		t.Errorf("got exit %d %q %q, want types ok with the tools of --tools", code, out, errOut)
	}
}

// A malformed tsconfig.json is reported at its file and line, instead of type errors:
// one that is not JSON by the load's bundling (as a run would refuse it), one whose
// options tsc refuses by the type check.
func TestValidateMalformedTSConfig(t *testing.T) {
	needTSC(t)
	dir := t.TempDir()
	putFile(t, filepath.Join(dir, "tsconfig.json"), "{\n  \"compilerOptions\": {\n    \"strict\": \"yes\"\n  }\n}\n")
	wf := putFile(t, filepath.Join(dir, "sub", "workflow.ts"), "export default { topics: ['a'], consumers: { c: { subscribe: ['a'], prepare() { return null; } } } };\n")
	code, _, errOut := runCLI(t, "validate", wf)
	at := filepath.Join(dir, "tsconfig.json") + ":3:15: TS5024"
	if code != 3 || !strings.Contains(errOut, at) || !strings.Contains(errOut, "tsconfig.json is invalid") {
		t.Errorf("got exit %d %q, want the tsconfig.json invalid at %s", code, errOut, at)
	}
	// A syntax error is reported alone, at its line, not with the type errors a
	// half-read configuration leads to.
	putFile(t, filepath.Join(dir, "tsconfig.json"), "{\n  \"compilerOptions\": {\n    \"strict\": true,\n\n")
	code, _, errOut = runCLI(t, "validate", wf)
	if code != 3 || !strings.Contains(errOut, "tsconfig.json:5:1: ") || strings.Contains(errOut, "declarations") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("got exit %d %q, want only the syntax error at tsconfig.json:5:1", code, errOut)
	}
	// A base configuration that cannot be read is named.
	putFile(t, filepath.Join(dir, "tsconfig.json"), `{"extends": "./base.json"}`)
	if code, _, errOut = runCLI(t, "validate", wf); code != 3 || !strings.Contains(errOut, "tsconfig.json:1:13") || !strings.Contains(errOut, "base.json") {
		t.Errorf("got exit %d %q, want the missing base.json named", code, errOut)
	}
}
