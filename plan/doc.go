// Package plan owns approved plans: a JSON list of tool steps that a person (or a
// planning program) wrote and a person approved, and the executor that runs exactly
// what was approved, one step at a time, leaving evidence of every step in the
// ledger's execution log.
//
// # Plan format
//
//	{
//	  "plan_id": "tidy",                      // 1-128 of [A-Za-z0-9._-], no '/'
//	  "intent": "what the plan is for",
//	  "steps": [
//	    {
//	      "step_id": "write-index",           // unique, same alphabet as plan_id
//	      "description": "optional text shown when confirming",
//	      "tool": "file_create",              // a registered tool, see below
//	      "arguments": {"path": "INDEX.md", "content": "..."},
//	      "depends_on": ["list-inbox"],       // earlier steps only
//	      "precondition": {"path_absent": "INDEX.md"},
//	      "requires_confirmation": true,
//	      "retry": {"max_attempts": 3, "initial_backoff_ms": 200,
//	                "max_backoff_ms": 5000, "multiplier": 2},
//	      "timeout_ms": 10000,
//	      "continue_on_failure": false
//	    }
//	  ]
//	}
//
// Unknown fields are refused. A bare tool name (file_read) is looked up in the
// "plan" namespace of the registry (plan.file_read); a dotted name (Files.move) is
// looked up as written. The registry is the whitelist: the CLI registers the
// workspace tools (plan.file_read, file_write, file_create, file_search, file_glob,
// Files.list, read, write, move, delete), plan.run_command and the code tools
// (symbols_in_file, references_to_symbol_name, references_from_file_to_symbol_name,
// splice_patch, splice_plan, lsp_check; see hostfuncs/codetool). read_file,
// write_file, create_file, search_files and glob_files are aliases of the file tools.
//
// Preconditions are checked, in this order, before the tool is called; the first that
// fails stops the plan with its code and the tool is never called: file_exists (E101),
// project_exists (E102: a go.mod, Cargo.toml or package.json), codegraph_exists (E103:
// the code index was built), symbol_exists {file?, symbol} (E104), dir_exists (E106),
// path_absent (E107), command_available (E108: an allowlisted,
// installed program), file_matches {path, pattern} (E105: the RE2 pattern matches the
// file's content; use (?m) for line anchors). Paths are workspace-relative and
// confined like the tools' paths (a path escaping the workspace is E302).
//
// # Authorization
//
// An authorization record approves one plan by id and by hash:
//
//	{"plan_id": "tidy", "status": "approved", "by": "alice",
//	 "at": "2026-01-02T03:04:05Z", "plan_hash": "sha256:…", "note": "optional"}
//
// status is pending, approved or denied. The hash is "sha256:" and the hex SHA-256 of
// the plan document in canonical JSON (keys sorted, no insignificant space), so
// reformatting the file keeps the approval and changing any value voids it.
//
// # Refusals
//
// Before anything runs the executor refuses, with the code in an *Error: an invalid
// plan (E001), no approval or a pending or denied one (E002), an authorization for
// another plan id or hash (E003), a tool that is not registered (E201), and arguments
// that do not match the tool's input schema: missing, extra or mistyped (E202).
//
// # Semantics
//
// Steps run in plan order, one at a time. A step whose dependency failed is blocked
// (E305) and its tool is not called. The plan stops at the first failure, and the
// results end at the failed step, unless the step says continue_on_failure: then later
// steps that do not depend on it still run. A confirmation (a callback; the CLI asks on
// the terminal or follows --non-interactive) that is denied stops the plan (E303)
// whatever the step says. Nothing is retried unless the step has a retry policy; then a
// failed or timed-out call (E301, E307) is tried again up to max_attempts calls in all,
// waiting initial_backoff_ms, then multiplier (default 2) times longer each time, at
// most max_backoff_ms (default 60000). Attempts, their errors and the waits are
// recorded. A command that exits non-zero fails its step (E301); one killed at its
// timeout, or a step over its timeout_ms, is E307; a path or program outside the
// sandbox is E302.
//
// # Evidence and ids
//
// Every step writes one ledger.ExecutionRecord: execution id, plan id, step id, seq
// (the step's 1-based position), tool, arguments, start and end time, duration,
// success, exit code, stdout, stderr, error and error code, result, and diagnostics
// (plan hash, execution number, operation, attempts, backoff, mutation id and
// idempotency key, approver). Arguments, outputs and errors are redacted before they
// are stored, streamed or printed: the credential patterns of hostfuncs.Redactor,
// values registered as secret, and the tools' secret fields; arguments by the one
// recipe of stored params (hostfuncs.StoredParams).
//
// Executions of a plan are numbered 1, 2, … by the ledger, which reserves each number
// in one transaction (ledger.Store.ReserveExecution), so that two executors starting
// the same plan at once get different numbers. The execution id of a plan execution is
// "<plan_id>/<n>", and of one step's record in it "<plan_id>/<n>/<step_id>". Ids are
// derived, not random, so that re-reading an execution, or running the same plan on a
// fresh ledger, gives the same ids; they are unique within a ledger because n only
// grows, plan and step ids cannot contain '/', and the ledger refuses a second record
// with the same id (ledger.ErrExecutionExists).
//
// # Mutations and resuming
//
// A step whose call is a mutation goes through the ledger like a workflow mutation: it
// is recorded in_flight (RunID empty, workflow "plan:<plan_id>", handler the step id)
// with the idempotency key derived from the plan, the step, the canonical arguments
// and the scope "plan/<plan_id>/<n>/<step_id>" before the tool is called, then marked
// applied or failed. Reads are not recorded as mutations.
//
// If the plan's latest execution was interrupted (not every step has a record and no
// recorded failure stopped it) and ran the same plan hash, Run resumes it: steps with
// a record are not run again, a step whose mutation was applied reuses its result, and
// a step whose mutation is still in flight is reconciled with its tool; if that cannot
// decide, the plan stops with E306 and the mutation waits for a person (scripthost
// resolve), after which running the plan again resumes it. A finished execution is
// never resumed: running the plan again starts execution n+1. Nor is an execution that
// another Run in the same process is executing: in the ledger it looks interrupted too,
// so a Run resumes an execution only when it claims it first, and two Runs of a plan
// started at once each run their own. (Across processes that running execution cannot
// be told from an interrupted one.)
package plan
