package main

import (
	"io"
	"strings"
	"testing"
)

const sample = `goos: linux
pkg: github.com/scripthost/scripthost/sandbox/wasm
BenchmarkToolCall/ref-2    	      50	    967793 ns/op	       967.8 ns/toolcall
BenchmarkToolCall/scripthost-2         	      50	   1464976 ns/op	      1465 ns/toolcall	         1.514 x_ref
pkg: github.com/scripthost/scripthost/runtime
BenchmarkConsumerRun/workflows=16/ref-2     	     200	   7821349 ns/op	   7821349 ns/run
BenchmarkConsumerRun/workflows=16/scripthost-2   	     200	   400000 ns/op	   400000 ns/run	  2500 runs/s	  0.0511 x_ref	  1900 fs-files/s	  410.5 fs-cpu-µs/file
BenchmarkConsumerRunNoIO/workflows=1/ref-2     	     200	   500000 ns/op	   500000 ns/run
BenchmarkConsumerRunNoIO/workflows=1/scripthost-2   	     200	   1000000 ns/op	   1000000 ns/run	  1000 runs/s	  2.0 x_ref
ok  	github.com/scripthost/scripthost/runtime	29.517s
pkg: github.com/scripthost/scripthost/bench
BenchmarkDBOS/workflows=1/ref-2     	     100	   1346000 ns/op	   1346000 ns/run	       743.0 runs/s
BenchmarkDBOS/workflows=1/scripthost-2         	     100	   8333333 ns/op	   8333333 ns/run	       120.0 runs/s	         6.191 x_ref
`

func TestTable(t *testing.T) {
	results, failed, err := read(strings.NewReader(sample), io.Discard)
	if err != nil || failed {
		t.Fatalf("read: failed %v, err %v", failed, err)
	}
	got := table(results)
	for _, want := range []string{
		"| Wasm (WAT) tool call, timeout armed (ns/call ≤ 1000) | 1.5 µs | 968 ns | 1.51× | ≤ 1.0 µs | no |",
		"| end-to-end consumer run, 16 workflows (≥ 2,000/s) | 400.0 µs | 7.82 ms | 0.05× (2500 runs/s; the file system alone: 1900 files/s) | ≥ 2000 runs/s | yes |",
		"| JS phase with one tool call (fresh sandbox) | not run |",
		"| end-to-end consumer run, mutation without I/O, sequential | 1.00 ms | 500.0 µs | 2.00× (1000 runs/s) | — | — |",
		"| end-to-end consumer run vs DBOS 1-step workflow, SQLite FULL, sequential | 8.33 ms | 1.35 ms | 6.19× | ≤ 0.29× | no |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q; got\n%s", want, got)
		}
	}
}

// TestTableAgainst: a PostgreSQL row is set against SQLite's rate from another
// package of the same run, and a skipped one says why.
func TestTableAgainst(t *testing.T) {
	const out = `pkg: github.com/scripthost/scripthost/ledger/sqlite
BenchmarkMutation/runs=16/scripthost-2   	  5000	  100000 ns/op	  100000 ns/mutation	  10000 mutations/s	  0.9 x_ref
pkg: github.com/scripthost/scripthost/ledger/postgres
BenchmarkMutation/hosts=1-2   	  2000	  400000 ns/op	  2500 mutations/s
pkg: github.com/scripthost/scripthost/runtime
--- SKIP: BenchmarkHosts/postgres/hosts=4: PostgreSQL tests skipped: no server
`
	results, failed, err := read(strings.NewReader(out), io.Discard)
	if err != nil || failed {
		t.Fatalf("read: failed %v, err %v", failed, err)
	}
	got := table(results)
	for _, want := range []string{
		"| PostgreSQL durable mutations, 1 host × 16 runs, vs SQLite × 16 | 2500 mutations/s | 10000 mutations/s | 0.25× | — | — |",
		"| PostgreSQL consumer runs, 4 hosts × 16 runs, vs SQLite × 16 | not run: PostgreSQL tests skipped: no server |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q; got\n%s", want, got)
		}
	}
}

func TestReadFailure(t *testing.T) {
	_, failed, _ := read(strings.NewReader("--- FAIL: BenchmarkX\nFAIL\tpkg\t1s\n"), io.Discard)
	if !failed {
		t.Error("got failed false for output with FAIL, want true")
	}
}
