# scripthost: the four targets. See README.md.
GO ?= go

.PHONY: run test check bench soak wasm guests

run: ## run the example workflow end to end on a fresh SQLite ledger in .run/
	./scripts/files/run.sh

wasm: ## build the Go-to-Wasm example workflow
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -o scripts/files-wasm/workflow.wasm ./scripts/files-wasm

guests: ## rebuild the committed Rust and AssemblyScript guest modules from source
	./scripts/files-rust/build.sh
	./sandbox/wasm/testdata/guests/conformance-rust/build.sh
	./scripts/files-assemblyscript/build.sh
	./sandbox/wasm/testdata/guests/conformance-assemblyscript/build.sh

test: ## the whole test suite, with the race detector
	$(GO) test -race -timeout 15m ./...

check: ## formatting, vet, then the tests
	@test -z "$$(gofmt -l . | grep -v '^bench/')" || { gofmt -l .; exit 1; }
	$(GO) vet ./...
	$(MAKE) test

bench: ## Go benchmarks of the hot paths
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s ./...

soak: ## longer crash and fuzz runs (bounded)
	SCRIPTHOST_SOAK=1 $(GO) test -run 'Soak|Kill' -timeout 60m ./...
