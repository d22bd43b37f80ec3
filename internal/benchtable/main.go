// Command benchtable reads `go test -bench` output on stdin, passes it through, and
// then prints the table of the hot paths: each row's time per unit next to its
// reference measured in the same run, the ratio, and the target. It exits non-zero
// when a benchmark failed. `make bench` pipes the benchmarks into it.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// row is one line of the table: the benchmark (package and name, without the
// sub-benchmark side or the -N suffix) and how its target is judged.
type row struct {
	work  string
	pkg   string // last element of the import path
	name  string
	unit  string // the ns/UNIT metric compared, or a rate metric
	rate  bool   // the target is a minimum of unit (e.g. runs/s), not a ratio
	limit float64
}

var rows = []row{
	{"JS phase with one tool call (fresh sandbox)", "js", "BenchmarkJSPhaseToolCall", "ns/phase", false, 3},
	{"per extra tool call in a JS phase", "js", "BenchmarkJSToolCall", "ns/call", false, 2},
	{"JS phase with 10 KB state in, small result out", "js", "BenchmarkJSStatePhase", "ns/phase", false, 1.5},
	{"load of a 7-file workflow (bundle, compile, definition), vs the same code as one file", "bundle", "BenchmarkBundleLoad", "ns/load", false, 0},
	{"JS phase of a bundled workflow of ES modules, vs the same code as one file", "bundle", "BenchmarkBundledPhase/esm", "ns/phase", false, 1.2},
	{"JS phase of a bundled workflow with a CommonJS package, vs the same code as one file", "bundle", "BenchmarkBundledPhase/cjs", "ns/phase", false, 0},
	{"Wasm (WAT) phase with one tool call", "wasm", "BenchmarkPhaseToolCall", "ns/phase", false, 0},
	{"Wasm (WAT) tool call, timeout armed (ns/call ≤ 1000)", "wasm", "BenchmarkToolCall", "ns/toolcall", false, 0},
	{"Go-built Wasm guest phase (ns ≤ 1 ms)", "wasm", "BenchmarkGoGuestPhase", "ns/op", false, 0},
	{"Rust-built Wasm phase with one tool call, vs WAT", "wasm", "BenchmarkRustGuestPhaseToolCall", "ns/phase", false, 2},
	{"AssemblyScript-built Wasm phase with one tool call, vs WAT", "wasm", "BenchmarkAssemblyScriptGuestPhaseToolCall", "ns/phase", false, 2},
	{"Go-built Wasm phase with one tool call, vs WAT", "wasm", "BenchmarkGoGuestPhaseToolCall", "ns/phase", false, 0},
	{"Wasm phase writing 8 pages of a 16 MiB memory, reset by written pages vs copied whole", "wasm", "BenchmarkResetLargeMemory", "ns/phase", false, 0},
	{"scheduler's pending-events read after a commit, vs its query compiled once", "sqlite", "BenchmarkRead/PendingEvents", "ns/read", false, 0},
	{"durable mutation, 1 run", "sqlite", "BenchmarkMutation/runs=1", "ns/mutation", false, 0},
	{"durable mutation, 16 concurrent runs (≥ 8,000/s)", "sqlite", "BenchmarkMutation/runs=16", "mutations/s", true, 8000},
	{"end-to-end consumer run, sequential (≥ 600/s)", "runtime", "BenchmarkConsumerRun/workflows=1", "runs/s", true, 600},
	{"end-to-end consumer run, 16 workflows (≥ 2,000/s)", "runtime", "BenchmarkConsumerRun/workflows=16", "runs/s", true, 2000},
	{"end-to-end consumer run, mutation without I/O, sequential", "runtime", "BenchmarkConsumerRunNoIO/workflows=1", "runs/s", true, 0},
	{"end-to-end consumer run, mutation without I/O, 16 workflows", "runtime", "BenchmarkConsumerRunNoIO/workflows=16", "runs/s", true, 0},
	{"end-to-end consumer run, process set up as by `scripthost run`, sequential (≥ 600/s)", "runtime", "BenchmarkConsumerRunCommand/workflows=1", "runs/s", true, 600},
	{"end-to-end consumer run, process set up as by `scripthost run`, 16 workflows (≥ 2,000/s)", "runtime", "BenchmarkConsumerRunCommand/workflows=16", "runs/s", true, 2000},
	{"end-to-end consumer run, process set up as by `scripthost run`, no-I/O mutation, sequential", "runtime", "BenchmarkConsumerRunNoIOCommand/workflows=1", "runs/s", true, 0},
	{"end-to-end consumer run, process set up as by `scripthost run`, no-I/O mutation, 16 workflows", "runtime", "BenchmarkConsumerRunNoIOCommand/workflows=16", "runs/s", true, 0},
	{"PostgreSQL durable mutations, 1 host × 16 runs, vs SQLite × 16", "postgres", "BenchmarkMutation/hosts=1", "mutations/s", true, 0},
	{"PostgreSQL durable mutations, 4 hosts × 16 runs, vs SQLite × 16", "postgres", "BenchmarkMutation/hosts=4", "mutations/s", true, 0},
	{"PostgreSQL consumer runs, 1 host × 16 runs, vs SQLite × 16", "runtime", "BenchmarkHosts/postgres/hosts=1", "runs/s", true, 0},
	{"PostgreSQL consumer runs, 2 hosts × 16 runs, vs SQLite × 16", "runtime", "BenchmarkHosts/postgres/hosts=2", "runs/s", true, 0},
	{"PostgreSQL consumer runs, 4 hosts × 16 runs, vs SQLite × 16", "runtime", "BenchmarkHosts/postgres/hosts=4", "runs/s", true, 0},
	{"agent step, model answering at once (ns/step ≤ 5 ms), vs one turn record", "agent", "BenchmarkAgentStep", "ns/step", false, 0},
	{"agent read-only tool dispatch (ns/call ≤ 1 ms), vs a direct call", "agent", "BenchmarkAgentToolDispatch", "ns/call", false, 0},
	{"agent turn with a durable file write, vs the write alone", "agent", "BenchmarkAgentDurableTurn", "ns/turn", false, 0},
	{"end-to-end consumer run vs DBOS 1-step workflow, SQLite FULL, sequential", "bench", "BenchmarkDBOS/workflows=1", "ns/run", false, 1 / 3.5},
	{"end-to-end consumer run vs DBOS 1-step workflow, SQLite FULL, 16 at once", "bench", "BenchmarkDBOS/workflows=16", "ns/run", false, 1 / 3.5},
	{"vs DBOS, process set up as by `scripthost run` for both, sequential", "bench", "BenchmarkDBOSCommand/workflows=1", "ns/run", false, 1 / 3.5},
	{"vs DBOS, process set up as by `scripthost run` for both, 16 at once", "bench", "BenchmarkDBOSCommand/workflows=16", "ns/run", false, 1 / 3.5},
	{"end-to-end consumer run vs DBOS 1-step workflow, both on PostgreSQL, sequential (≤ DBOS)", "bench", "BenchmarkDBOSPostgres/workflows=1", "ns/run", false, 1},
	{"end-to-end consumer run vs DBOS 1-step workflow, both on PostgreSQL, 16 at once (≤ DBOS)", "bench", "BenchmarkDBOSPostgres/workflows=16", "ns/run", false, 1},
	{"vs DBOS on PostgreSQL, process set up as by `scripthost run` for both, sequential (≤ DBOS)", "bench", "BenchmarkDBOSPostgresCommand/workflows=1", "ns/run", false, 1},
	{"vs DBOS on PostgreSQL, process set up as by `scripthost run` for both, 16 at once (≤ DBOS)", "bench", "BenchmarkDBOSPostgresCommand/workflows=16", "ns/run", false, 1},
	{"code index of this repository from scratch, vs reading and hashing it (≤ 10 s)", "codegraph", "BenchmarkIndexRepo", "ns/index", false, 0},
	{"code index refresh of one changed file, vs parsing it (≤ 50 ms)", "codegraph", "BenchmarkRefreshOneFile", "ns/refresh", false, 0},
	{"symbol query, vs the smallest SQLite query (≤ 5 ms)", "codegraph", "BenchmarkSymbolQuery", "ns/query", false, 0},
}

// against sets rate rows against another benchmark of the same run (row key →
// "pkg/Name/side"): the ratio is the row's rate over the other's. They report, with
// no target: PostgreSQL pays a network round trip and a WAL flush per commit.
var against = map[string]string{
	"postgres/BenchmarkMutation/hosts=1":      "sqlite/BenchmarkMutation/runs=16/scripthost",
	"postgres/BenchmarkMutation/hosts=4":      "sqlite/BenchmarkMutation/runs=16/scripthost",
	"runtime/BenchmarkHosts/postgres/hosts=1": "runtime/BenchmarkHosts/sqlite/hosts=1",
	"runtime/BenchmarkHosts/postgres/hosts=2": "runtime/BenchmarkHosts/sqlite/hosts=1",
	"runtime/BenchmarkHosts/postgres/hosts=4": "runtime/BenchmarkHosts/sqlite/hosts=1",
}

// absolute holds targets on the subject's own time per unit, in ns.
var absolute = map[string]float64{
	"wasm/BenchmarkToolCall":            1000,
	"wasm/BenchmarkGoGuestPhase":        1e6,
	"codegraph/BenchmarkIndexRepo":      10e9,
	"codegraph/BenchmarkRefreshOneFile": 50e6,
	"codegraph/BenchmarkSymbolQuery":    5e6,
	"agent/BenchmarkAgentStep":          5e6,
	"agent/BenchmarkAgentToolDispatch":  1e6,
}

// fsRate is the metric of a row whose work writes files: the file system's own rate
// for that file work, measured beside it (benchrun's fileSystemAlone).
const fsRate = "fs-files/s"

// result is what one benchmark line reported: metric → value.
type result map[string]float64

// skipKey is where read files the reason a benchmark gave for skipping itself (as
// "--- SKIP: BenchmarkName: reason" on stdout; go test prints no skip in bench mode).
const skipKey = "skip: "

func main() {
	results, failed, err := read(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	fmt.Println()
	fmt.Print(table(results))
	if failed {
		fmt.Fprintln(os.Stderr, "benchtable: a benchmark failed (see above)")
		os.Exit(1)
	}
}

// read passes in through to echo and collects the metrics of every benchmark line,
// keyed by "pkg/Name/side" with the -N suffix removed.
func read(in io.Reader, echo io.Writer) (map[string]result, bool, error) {
	results := map[string]result{}
	skips := map[string]string{}
	failed := false
	pkg := ""
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(echo, line)
		if strings.HasPrefix(line, "FAIL") || strings.HasPrefix(line, "--- FAIL") || strings.HasPrefix(line, "panic:") {
			failed = true
		}
		if rest, ok := strings.CutPrefix(line, "--- SKIP: Benchmark"); ok {
			if name, reason, ok := strings.Cut(rest, ": "); ok {
				skips[pkg+"/Benchmark"+name] = reason
			}
			continue
		}
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = p[strings.LastIndex(p, "/")+1:]
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		if i := strings.LastIndex(name, "-"); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		r := result{}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			r[f[i+1]] = v
		}
		results[pkg+"/"+name] = r
	}
	for name, reason := range skips {
		if _, ran := results[name]; !ran {
			results[skipKey+name] = result{reason: 0}
		}
	}
	return results, failed, sc.Err()
}

// table renders the rows found in results as Markdown.
func table(results map[string]result) string {
	var sb strings.Builder
	sb.WriteString("| work | scripthost | reference (same run) | ratio | target | met |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		key := r.pkg + "/" + r.name
		subj, ok := results[key+"/scripthost"]
		ref := results[key+"/ref"]
		if !ok {
			subj, ok = results[key]
		}
		other := against[key]
		if other != "" {
			ref = results[other]
		}
		if !ok {
			why := ""
			for reason := range results[skipKey+key] {
				why = ": " + reason
			}
			fmt.Fprintf(&sb, "| %s | not run%s | | | | |\n", r.work, why)
			continue
		}
		ns := subj[r.unit]
		if r.rate {
			ns = subj[nsUnit(subj)]
		}
		cell := func(res result) string {
			if res == nil {
				return "—"
			}
			if other != "" {
				return fmt.Sprintf("%.0f %s", res[r.unit], r.unit)
			}
			u := nsUnit(res)
			if r.unit == "ns/op" {
				u = "ns/op"
			}
			return duration(res[u])
		}
		ratio, target, met := "—", "—", "—"
		if x, ok := subj["x_ref"]; ok {
			ratio = fmt.Sprintf("%.2f×", x)
		}
		switch {
		case other != "":
			rate := subj[r.unit]
			if refRate := ref[r.unit]; refRate > 0 {
				ratio = fmt.Sprintf("%.2f×", rate/refRate)
			}
		case r.rate:
			rate := subj[r.unit]
			note := ""
			if fs, ok := subj[fsRate]; ok {
				// The file system's own rate for the row's file work, measured in the
				// same run: a ceiling that no host can exceed.
				note = fmt.Sprintf("; the file system alone: %.0f files/s", fs)
			}
			ratio += fmt.Sprintf(" (%.0f %s%s)", rate, r.unit, note)
			if r.limit > 0 {
				target = fmt.Sprintf("≥ %.0f %s", r.limit, r.unit)
				met = yes(rate >= r.limit)
			}
		case r.limit > 0:
			target = "≤ " + strconv.FormatFloat(r.limit, 'g', 2, 64) + "×"
			met = yes(subj["x_ref"] <= r.limit)
		case absolute[key] > 0:
			target = "≤ " + duration(absolute[key])
			met = yes(ns <= absolute[key])
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s | %s |\n", r.work, cell(subj), cell(ref), ratio, target, met)
	}
	return sb.String()
}

// nsUnit returns the ns/UNIT metric a result carries besides ns/op, or ns/op.
func nsUnit(r result) string {
	for k := range r {
		if strings.HasPrefix(k, "ns/") && k != "ns/op" {
			return k
		}
	}
	return "ns/op"
}

func duration(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}
