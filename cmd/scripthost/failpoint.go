package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"syscall"

	"github.com/scripthost/scripthost/hostfuncs"
)

// failpointEnv names the point at which the process kills itself with SIGKILL, for
// crash tests: a phase boundary such as "consumer:after:mutating" or
// "consumer:created", or "tool:before-execute" / "tool:after-execute" around a
// mutating tool call. Several points may be given, separated by commas.
const failpointEnv = "SCRIPTHOST_FAILPOINT"

var failpoints = func() map[string]bool {
	m := map[string]bool{}
	for _, p := range strings.Split(os.Getenv(failpointEnv), ",") {
		if p = strings.TrimSpace(p); p != "" {
			m[p] = true
		}
	}
	return m
}()

// failpoint kills the process when name is armed.
func failpoint(name string) {
	if failpoints[name] {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}

// wrapToolFailpoints arms the tool failpoints around every mutating call.
func wrapToolFailpoints(reg *hostfuncs.Registry) {
	if !failpoints["tool:before-execute"] && !failpoints["tool:after-execute"] {
		return
	}
	for _, t := range reg.Tools() {
		exec := t.Execute
		t.Execute = func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			if hostfuncs.IdempotencyKey(ctx) == "" {
				return exec(ctx, in)
			}
			failpoint("tool:before-execute")
			out, err := exec(ctx, in)
			failpoint("tool:after-execute")
			return out, err
		}
	}
}
