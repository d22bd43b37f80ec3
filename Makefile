# scripthost: the four targets. See README.md.
GO ?= go

.PHONY: run test check bench soak wasm

run: ## run the example workflow end to end on a fresh SQLite ledger in .run/
	./scripts/files/run.sh

wasm: ## build the Go-to-Wasm example workflow
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -o scripts/files-wasm/workflow.wasm ./scripts/files-wasm

test: ## the whole test suite, with the race detector
	$(GO) test -race -timeout 15m ./...

check: ## formatting, vet, then the tests
	@test -z "$$(gofmt -l . | grep -v '^bench/')" || { gofmt -l .; exit 1; }
	$(GO) vet ./...
	$(MAKE) test

bench: ## benchmarks of the hot paths next to their references, then the table of ratios
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(or $(BENCHTIME),1s) ./... 2>&1 | $(GO) run ./internal/benchtable

soak: ## longer crash and fuzz runs (bounded)
	SCRIPTHOST_SOAK=1 $(GO) test -run 'Soak|Kill' -timeout 60m ./...
