# scripthost: build, run and test targets. See docs/building.md.
GO ?= go

.PHONY: run digest test check bench soak wasm guests fuzz stripe-mock chaos goja-upstream

# Programs the tests run, installed into .tools/ at pinned versions.
STRIPE_MOCK ?= github.com/stripe/stripe-mock@v0.203.0

run: ## run the example workflow end to end on a fresh SQLite ledger in .run/
	./scripts/files/run.sh

digest: ## the TypeScript example of modules and an npm package (scripts/digest; needs npm): test, run, record its runs as a fixture, replay the ledger
	./scripts/digest/run.sh

wasm: ## build the Go-to-Wasm example workflow
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -o scripts/files-wasm/workflow.wasm ./scripts/files-wasm

guests: ## rebuild the committed Rust and AssemblyScript guest modules from source (Rust: Debian's toolchain and crates, ahead of a rustup one on PATH)
	PATH=/usr/bin:$$PATH SCRIPTHOST_CARGO_VENDOR=/usr/share/cargo/registry ./scripts/files-rust/build.sh
	PATH=/usr/bin:$$PATH SCRIPTHOST_CARGO_VENDOR=/usr/share/cargo/registry ./sandbox/wasm/testdata/guests/conformance-rust/build.sh
	./scripts/files-assemblyscript/build.sh
	./sandbox/wasm/testdata/guests/conformance-assemblyscript/build.sh

test: stripe-mock ## the whole test suite, with the race detector
	@if [ -n "$$SCRIPTHOST_TEST_PG" ]; then echo "PostgreSQL tests: on the server SCRIPTHOST_TEST_PG names"; \
	elif ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null; then \
	  echo "PostgreSQL tests: on throwaway servers started from the local PostgreSQL binaries"; \
	else echo "PostgreSQL tests: SKIPPED (no SCRIPTHOST_TEST_PG=postgres://… and no PostgreSQL installed)"; fi
	SCRIPTHOST_VERIFY_ROW_CACHE=1 SCRIPTHOST_STRIPE_MOCK=$(CURDIR)/.tools/stripe-mock $(GO) test -race -timeout 15m ./...

goja-upstream: ## goja's own tests, from the upstream version third_party/goja was taken from, against third_party/goja
	./third_party/goja-upstream-tests.sh

.PHONY: goja-diff
goja-diff: ## what third_party/goja changes in that upstream version, as one diff (third_party/goja/PATCHES.md)
	./third_party/goja-upstream-diff.sh

stripe-mock: ## Stripe's API mock server for the HTTP tool tests, into .tools/ (they skip without it)
	GOBIN=$(CURDIR)/.tools $(GO) install $(STRIPE_MOCK) || echo "make: stripe-mock not installed; the Stripe tests will skip"

check: ## formatting, vet, then the tests
	@test -z "$$(gofmt -l . | grep -v '^bench/')" || { gofmt -l .; exit 1; }
	$(GO) vet ./...
	$(MAKE) test

bench: ## benchmarks of the hot paths next to their references (and, in bench/, next to DBOS), then the table of ratios; one package at a time, so that no two benchmarks share the cores
	{ $(GO) test -p 1 -run '^$$' -bench . -benchmem -benchtime $(or $(BENCHTIME),1s) ./... && \
	  cd bench && $(GO) test -run '^$$' -bench . -benchmem -benchtime $(or $(BENCHTIME),1s) ./...; } 2>&1 | $(GO) run ./internal/benchtable

chaos: ## shared PostgreSQL ledger: 100 kill-one-host cycles (takeover times), database restarts under load, an idle host's polls and publish-to-host latency (bounded)
	SCRIPTHOST_CHAOS=1 $(GO) test -count=1 -run '$(or $(CHAOS_TESTS),TestSharedLedgerKillOneHost|TestDatabaseChaos|TestSharedLedgerIdleHost)' -v -timeout 30m ./cmd/scripthost/

SIM_SEEDS ?= 100000
soak: ## longer crash runs and the simulator over SIM_SEEDS seeds (bounded)
	SCRIPTHOST_SOAK=1 $(GO) test -run 'Soak|Kill' -timeout 60m ./...
	$(GO) test -run '^TestSimulate$$' -timeout 6h ./runtime -args -sim.seeds=$(SIM_SEEDS)

# FUZZTIME is a duration (30s) or a count of inputs (10000x).
FUZZTIME ?= 30s
FUZZ_TARGETS = .:FuzzCanonicalJSON sandbox/wasm:FuzzHostCall sandbox/wasm:FuzzLoad sandbox/wasm:FuzzInstrument hostfuncs:FuzzValidateJSON \
	runtime:FuzzParseDefinition hostfuncs/httptool:FuzzLoad hostfuncs/httptool:FuzzFormRoundTrip fixture:FuzzParse plan:FuzzParse plan:FuzzParseAuthorization \
	plan:FuzzApprovalHash internal/document:FuzzJSON internal/document:FuzzYAML
fuzz: ## every fuzz target for FUZZTIME each (seed corpora in each package's testdata/fuzz)
	@for t in $(FUZZ_TARGETS); do echo "fuzz $$t"; \
	  $(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) ./$${t%%:*} || exit 1; done
