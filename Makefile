# scripthost: the four targets. See README.md.
GO ?= go

.PHONY: run test check bench soak wasm chaos

run: ## run the example workflow end to end on a fresh SQLite ledger in .run/
	./scripts/files/run.sh

wasm: ## build the Go-to-Wasm example workflow
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -o scripts/files-wasm/workflow.wasm ./scripts/files-wasm

test: ## the whole test suite, with the race detector
	@if [ -n "$$SCRIPTHOST_TEST_PG" ]; then echo "PostgreSQL tests: on the server SCRIPTHOST_TEST_PG names"; \
	elif ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null; then \
	  echo "PostgreSQL tests: on throwaway servers started from the local PostgreSQL binaries"; \
	else echo "PostgreSQL tests: SKIPPED (no SCRIPTHOST_TEST_PG=postgres://… and no PostgreSQL installed)"; fi
	$(GO) test -race -timeout 15m ./...

check: ## formatting, vet, then the tests
	@test -z "$$(gofmt -l . | grep -v '^bench/')" || { gofmt -l .; exit 1; }
	$(GO) vet ./...
	$(MAKE) test

bench: ## Go benchmarks of the hot paths
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s ./...

chaos: ## shared PostgreSQL ledger: 100 kill-one-host cycles, database restarts under load (bounded)
	SCRIPTHOST_CHAOS=1 $(GO) test -count=1 -run 'TestSharedLedgerKillOneHost|TestDatabaseChaos' -v -timeout 30m ./cmd/scripthost/

soak: ## longer crash and fuzz runs (bounded)
	SCRIPTHOST_SOAK=1 $(GO) test -run 'Soak|Kill' -timeout 60m ./...
