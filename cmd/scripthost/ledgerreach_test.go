package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost/agent"
	"github.com/scripthost/scripthost/hostfuncs/command"
	"github.com/scripthost/scripthost/internal/fakemodel"
	"github.com/scripthost/scripthost/ledger/sqlite"
	"github.com/scripthost/scripthost/plan"
)

// isolateHome points the default ledger and every per-user directory at fresh
// directories under root, so that no test writes into the real home; it returns the
// default ledger's path.
func isolateHome(t *testing.T, root string) string {
	t.Helper()
	t.Setenv(dbEnv, "")
	t.Setenv("HOME", filepath.Join(root, "home"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(root, "state"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(root, "config"))
	t.Setenv(serveTokenEnv, "")
	return filepath.Join(root, "state", "scripthost", "scripthost.db")
}

// treeDigest names every file under root with its mode and a hash of its content, so
// that two digests differ when anything was created, removed or changed.
func treeDigest(t *testing.T, root string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %v", p, fi.Mode())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			line += " " + hex.EncodeToString(sum[:8])
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// readOnlyWorkflow reads a file of its workspace and changes nothing.
const readOnlyWorkflow = `export default {
  topics: ['t'],
  producers: { p: { schedule: { every: '1h' }, async handler() { await Files.read({ path: 'workflow.js' }); } } },
};
`

// TestLedgerInWorkspaceRefused starts every command that gives tools a workspace with
// the ledger inside that workspace, however the overlap is spelled: each is refused
// at start with the error that says how to fix it, and nothing on disk is created or
// changed, neither the ledger nor a lock or token beside it.
func TestLedgerInWorkspaceRefused(t *testing.T) {
	const inside = "is inside the workspace"
	tests := []struct {
		name string
		// setup prepares root (the workspace is root/ws, holding workflow.js, and
		// root/plan.json and root/task.yaml exist) and returns the CLI's arguments and
		// the working directory to run them in ("" for root).
		setup func(t *testing.T, root, model string) (args []string, dir string)
		want  []string
	}{
		{"--db in the workspace", func(t *testing.T, root, _ string) ([]string, string) {
			return []string{"--db", filepath.Join(root, "ws", "l.db"), "run", filepath.Join(root, "ws", "workflow.js"), "--once"}, ""
		}, []string{"the ledger /", filepath.Join("ws", "l.db") + " " + inside, "--db", "--workspace"}},
		{"an existing ledger in the workspace", func(t *testing.T, root, _ string) ([]string, string) {
			db := filepath.Join(root, "ws", "l.db")
			st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			st.Close()
			return []string{"--db", db, "run", filepath.Join(root, "ws", "workflow.js"), "--once"}, ""
		}, []string{inside}},
		{"the old default, ./scripthost.db, named by $SCRIPTHOST_DB", func(t *testing.T, root, _ string) ([]string, string) {
			t.Setenv(dbEnv, "./scripthost.db")
			return []string{"run", "workflow.js", "--once"}, filepath.Join(root, "ws")
		}, []string{"scripthost.db", inside}},
		{"a relative --db with .. that resolves inside", func(t *testing.T, root, _ string) ([]string, string) {
			return []string{"--db", "../l.db", "run", "../workflow.js", "--once"}, filepath.Join(root, "ws", "sub")
		}, []string{inside}},
		{"--db through a symlinked directory", func(t *testing.T, root, _ string) ([]string, string) {
			if err := os.Symlink(filepath.Join(root, "ws", "sub"), filepath.Join(root, "elsewhere")); err != nil {
				t.Fatal(err)
			}
			return []string{"--db", filepath.Join(root, "elsewhere", "l.db"), "run", filepath.Join(root, "ws", "workflow.js"), "--once"}, ""
		}, []string{inside, "it resolves to ", filepath.Join("ws", "sub", "l.db") + ")"}},
		{"a workspace that is a symlink to the ledger's folder", func(t *testing.T, root, _ string) ([]string, string) {
			if err := os.Symlink(filepath.Join(root, "ledgers"), filepath.Join(root, "ws-link")); err != nil {
				t.Fatal(err)
			}
			return []string{"--db", filepath.Join(root, "ledgers", "l.db"), "run", filepath.Join(root, "ws", "workflow.js"), "--once",
				"--workspace", filepath.Join(root, "ws-link")}, ""
		}, []string{inside, "ws-link (", filepath.Join("", "ledgers") + ")"}},
		{"serve, before it generates a token", func(t *testing.T, root, _ string) ([]string, string) {
			return []string{"--db", filepath.Join(root, "ws", "l.db"), "serve", "--listen", "127.0.0.1:0", filepath.Join(root, "ws", "workflow.js")}, ""
		}, []string{inside}},
		{"plan run", func(t *testing.T, root, _ string) ([]string, string) {
			return []string{"--db", filepath.Join(root, "ws", "l.db"), "plan", "run", filepath.Join(root, "plan.json"), "--approve",
				"--workspace", filepath.Join(root, "ws")}, ""
		}, []string{inside}},
		{"plan run in its default workspace, the working directory", func(t *testing.T, root, _ string) ([]string, string) {
			return []string{"--db", "l.db", "plan", "run", "../plan.json", "--approve"}, filepath.Join(root, "ws")
		}, []string{inside}},
		{"agent run", func(t *testing.T, root, model string) ([]string, string) {
			return []string{"--db", filepath.Join(root, "ws", "l.db"), "agent", "run", filepath.Join(root, "task.yaml"),
				"--workspace", filepath.Join(root, "ws"), "--model", model}, ""
		}, []string{inside}},
		{"a PostgreSQL ledger whose token file is in the workspace", func(t *testing.T, root, _ string) ([]string, string) {
			// Nothing listens there: the refusal comes before any connection.
			t.Setenv("XDG_CONFIG_HOME", filepath.Join(root, "ws", "config"))
			return []string{"--db", "postgres://nobody@127.0.0.1:1/ledger", "run", filepath.Join(root, "ws", "workflow.js"), "--once"}, ""
		}, []string{"the serve token file ", filepath.Join("ws", "config", "scripthost", "serve.token"), inside}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			isolateHome(t, root)
			putFile(t, filepath.Join(root, "ws", "workflow.js"), readOnlyWorkflow)
			putFile(t, filepath.Join(root, "ws", "sub", "notes.txt"), "notes")
			putFile(t, filepath.Join(root, "ledgers", "notes.txt"), "notes")
			putFile(t, filepath.Join(root, "plan.json"), `{"plan_id":"p","steps":[{"step_id":"s","tool":"write_file","arguments":{"path":"out.txt","content":"x"}}]}`)
			putFile(t, filepath.Join(root, "task.yaml"), "goal: nothing\nsteps: [{id: one, title: Do nothing}]\n")
			model := fakemodel.New()
			defer model.Close()
			args, dir := tt.setup(t, root, model.URL)
			if dir == "" {
				dir = root
			}
			t.Chdir(dir)
			before := treeDigest(t, root)
			code, stderr := cliWithin(t, 30*time.Second, args...)
			if code != 2 {
				t.Fatalf("got exit %d, want 2 (refused at start)\n%s", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("got %q, want it to say %q", stderr, w)
				}
			}
			if after := treeDigest(t, root); after != before {
				t.Errorf("the refused start changed files:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			if model.Count() != 0 {
				t.Errorf("got %d model requests, want none", model.Count())
			}
		})
	}
}

// reachWorkflow tries to read, from a workflow run in the default layout, every name
// under which the ledger and its side files could be reached: in the workspace (where
// earlier versions kept it), at their real paths, through symbolic links planted in
// the workspace. Its consumer then writes through a planted link, which fails its run.
// It logs "READ" or "WROTE" for each attempt that succeeds.
const reachWorkflow = `const targets = TARGETS;
export default {
  topics: ['t'],
  producers: { p: { schedule: { every: '1h' }, publishes: ['t'], async handler() {
    for (const path of targets) {
      try { const r = await Files.read({ path }); console.log('READ ' + path + ' ' + JSON.stringify(r).length); }
      catch (e) { console.log('refused ' + path); }
    }
    await Topics.publish({ topic: 't', id: 'w', payload: {} });
  } } },
  consumers: { c: { subscribe: ['t'],
    async prepare() { const [ev] = await Topics.peek({ topic: 't', limit: 1 }); return ev ? { reservations: [{ topic: 't', ids: [ev.id] }], data: ev.id } : null; },
    async mutate(id) {
      if (!id) return;
      await Files.write({ path: 'planted.db', content: 'garbage' });
      console.log('WROTE planted.db');
    },
    async next() {} } },
};
`

// TestDefaultLedgerOutOfReach runs a workflow as a user would, from its own folder
// with no --db: the ledger goes to the user's state directory, outside the workspace,
// and no name the workflow can give, a link planted in the workspace included, reaches
// it, its side files or its token. The ledger stays whole and any folder sees it.
func TestDefaultLedgerOutOfReach(t *testing.T) {
	root := t.TempDir()
	db := isolateHome(t, root)
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
		t.Fatal(err)
	}
	// A token as serve leaves it, to see that it is out of reach too.
	putFile(t, db+".token", "token-0123456789abcdef\n")
	rel, err := filepath.Rel(ws, db)
	if err != nil {
		t.Fatal(err)
	}
	targets := []string{"scripthost.db", "scripthost.db-wal", "scripthost.db-shm", "scripthost.db.token",
		rel, rel + "-wal", rel + ".token", db, db + "-wal", db + ".token",
		"planted.db", "planted-token", "planted-dir/scripthost.db", "planted-dir/scripthost.db.token"}
	quoted, _ := json.Marshal(targets)
	putFile(t, filepath.Join(ws, "workflow.js"), strings.Replace(reachWorkflow, "TARGETS", string(quoted), 1))
	for link, target := range map[string]string{"planted.db": db, "planted-token": db + ".token", "planted-dir": filepath.Dir(db)} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(ws)
	code, stdout, stderr := runCLI(t, "run", "workflow.js", "--once")
	// The write through the link is refused as a sandbox violation: its run fails.
	if code != exitBlocked || !strings.Contains(stderr, "planted.db") {
		t.Fatalf("run: got exit %d, want %d, the write through planted.db refused\n%s%s", code, exitBlocked, stdout, stderr)
	}
	for _, l := range strings.Split(stdout, "\n") {
		if strings.Contains(l, "READ ") || strings.Contains(l, "WROTE ") {
			t.Errorf("the workflow reached the ledger: %s", l)
		}
	}
	if got, want := strings.Count(stdout, "] refused "), len(targets); got != want {
		t.Errorf("got %d refused attempts, want %d\n%s", got, want, stdout)
	}
	entries, _ := os.ReadDir(ws)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "scripthost.db") {
			t.Errorf("got %s in the workspace, want the ledger elsewhere", e.Name())
		}
	}
	fi, err := os.Stat(filepath.Dir(db))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the default ledger's directory: got %v %v, want mode 0700", fi, err)
	}
	// Another folder sees the same ledger, and it is whole.
	t.Chdir(root)
	code, out, stderr := runCLI(t, "runs", "--json")
	var runs []struct{ Handler, Status string }
	if err := json.Unmarshal([]byte(out), &runs); code != 0 || err != nil || len(runs) != 2 {
		t.Errorf("runs from another folder: got exit %d, %d runs (%v)\n%s%s\nwant the 2 runs", code, len(runs), err, out, stderr)
	}
	if b, _ := os.ReadFile(db + ".token"); string(b) != "token-0123456789abcdef\n" {
		t.Errorf("token: got %q, want it unchanged", b)
	}
}

// TestLegacyLedgerNotSilentlyReplaced: a ledger left in the working directory by the
// old default is not passed over for a fresh one (whose runs would do again what the
// old one records as done): the command says where the ledger is now and how to go on.
func TestLegacyLedgerNotSilentlyReplaced(t *testing.T) {
	root := t.TempDir()
	db := isolateHome(t, root)
	dir := filepath.Join(root, "project")
	putFile(t, filepath.Join(dir, "workflow.js"), readOnlyWorkflow)
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "scripthost.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	t.Chdir(dir)
	for _, args := range [][]string{{"run", "workflow.js", "--once"}, {"runs"}} {
		code, _, stderr := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, "found ./scripthost.db") || !strings.Contains(stderr, db) {
			t.Errorf("%v: got exit %d %q, want 2 naming the old and the new place", args, code, stderr)
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("a fresh default ledger was created beside the old one")
	}
	// Named explicitly from outside, the old ledger is used.
	t.Chdir(root)
	if code, _, stderr := runCLI(t, "--db", filepath.Join(dir, "scripthost.db"), "runs"); code != 0 {
		t.Errorf("--db the old ledger: got exit %d %q, want 0", code, stderr)
	}
	// A file of that name that is not a database is no ledger.
	if err := os.WriteFile(filepath.Join(dir, "scripthost.db"), []byte("notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if code, _, stderr := runCLI(t, "run", "workflow.js", "--once"); code != 0 {
		t.Errorf("beside a scripthost.db that is not a database: got exit %d %q, want 0", code, stderr)
	}
}

// TestHelpNamesDefaultLedger: --help says where the default ledger is.
func TestHelpNamesDefaultLedger(t *testing.T) {
	root := t.TempDir()
	db := isolateHome(t, root)
	code, out, _ := runCLI(t, "--help")
	if code != 0 || !strings.Contains(out, db) {
		t.Errorf("--help: got exit %d\n%s\nwant it to name %s", code, out, db)
	}
}

// TestPlanToolsCannotReachLedger runs plans in the default layout (workspace and
// working directory the same folder, no --db): a command in the OS sandbox finds no
// ledger file under any name, and a plan that writes scripthost.db in its workspace
// leaves the ledger whole.
func TestPlanToolsCannotReachLedger(t *testing.T) {
	if ok, why := command.Sandboxed(); !ok {
		if os.Getenv("SCRIPTHOST_REQUIRE_SANDBOX") != "" {
			t.Fatalf("no OS sandbox, but SCRIPTHOST_REQUIRE_SANDBOX is set: %v", why)
		}
		t.Skipf("no OS sandbox here (%v): install bubblewrap to run this test", why)
	}
	root := t.TempDir()
	db := isolateHome(t, root)
	ws := filepath.Join(root, "ws")
	putFile(t, filepath.Join(ws, "notes.txt"), "notes")
	t.Chdir(ws)
	// A first plan creates the default ledger (and a -wal beside it).
	plan := func(id string, step string) string {
		return putFile(t, filepath.Join(root, id+".json"), `{"plan_id":"`+id+`","steps":[`+step+`]}`)
	}
	if code, out, errOut := cli(t, "", "plan", "run", plan("first", `{"step_id":"s","tool":"read_file","arguments":{"path":"notes.txt"}}`), "--approve"); code != 0 {
		t.Fatalf("first plan: exit %d\n%s%s", code, out, errOut)
	}
	putFile(t, db+".token", "token-0123456789abcdef\n")
	var names []string
	for _, n := range []string{"scripthost.db", "scripthost.db-wal", "scripthost.db-shm", "scripthost.db.token", db, db + "-wal", db + "-shm", db + ".token"} {
		names = append(names, "'"+n+"'")
	}
	script := "for f in " + strings.Join(names, " ") + `; do if cat "$f" >/dev/null 2>&1; then echo "READ $f"; else echo "missing $f"; fi; done`
	step, _ := json.Marshal(map[string]any{"step_id": "cat", "tool": "run_command", "arguments": map[string]any{"program": "sh", "args": []string{"-c", script}}})
	if code, out, errOut := cli(t, "", "plan", "run", plan("cat", string(step)), "--approve", "--allow-read-only", "sh"); code != 0 {
		t.Fatalf("cat plan: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := cli(t, "", "plan", "show", "cat/1", "--json")
	if code != 0 {
		t.Fatalf("plan show: exit %d %s", code, errOut)
	}
	var recs []struct {
		Stdout string `json:"stdout"`
	}
	if err := json.Unmarshal([]byte(out), &recs); err != nil || len(recs) != 1 {
		t.Fatalf("plan show: got %d records (%v)\n%s", len(recs), err, out)
	}
	if strings.Contains(recs[0].Stdout, "READ") || strings.Count(recs[0].Stdout, "missing ") != len(names) {
		t.Errorf("the command saw the ledger:\n%s", recs[0].Stdout)
	}

	write := `{"step_id":"w","tool":"write_file","arguments":{"path":"scripthost.db","content":"garbage"}}`
	if code, out, errOut := cli(t, "", "plan", "run", plan("write", write), "--approve", "--non-interactive=approve"); code != 0 {
		t.Fatalf("write plan: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := cli(t, "", "plan", "show", "first/1"); code != 0 || !strings.Contains(out, "first/1") {
		t.Errorf("the ledger after a plan wrote scripthost.db: got exit %d\n%s%s", code, out, errOut)
	}
}

// TestAgentToolsCannotReachLedger: an agent run in the default layout writes
// scripthost.db in its workspace and reads the ledger by its real path; the write
// lands in the workspace, the read is refused as a sandbox violation (which ends the
// session), and the ledger stays whole.
func TestAgentToolsCannotReachLedger(t *testing.T) {
	root := t.TempDir()
	db := isolateHome(t, root)
	ws := filepath.Join(root, "ws")
	putFile(t, filepath.Join(ws, "notes.txt"), "notes")
	srv := fakemodel.New(
		fakemodel.Answer{Calls: []fakemodel.Call{agentCall("write_file", map[string]string{"path": "scripthost.db", "content": "garbage"})}},
		fakemodel.Answer{Calls: []fakemodel.Call{agentCall("read_file", map[string]string{"path": db})}},
		fakemodel.Answer{Calls: []fakemodel.Call{agentCall(agent.CompleteTool, map[string]string{"summary": "done"})}},
	)
	defer srv.Close()
	task := putFile(t, filepath.Join(root, "task.yaml"), "goal: poke\nsteps: [{id: poke, title: Poke at the ledger}]\n")
	t.Chdir(ws)
	code, out, errOut := cli(t, "", "agent", "run", task, "--model", srv.URL, "--file-write", "auto")
	if code != plan.ExitSandboxViolation || srv.Count() != 2 || strings.Contains(out, "SQLite format") {
		t.Fatalf("agent run: got exit %d after %d model requests, want %d after 2 (the read refused)\n%s%s",
			code, srv.Count(), plan.ExitSandboxViolation, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "scripthost.db")); string(b) != "garbage" {
		t.Errorf("the workspace's scripthost.db: got %q, want the agent's write", b)
	}
	if code, out, errOut := cli(t, "", "agent", "list"); code != 0 || !strings.Contains(out, "failed") {
		t.Errorf("the ledger after the agent wrote scripthost.db: got exit %d\n%s%s", code, out, errOut)
	}
}
