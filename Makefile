# scripthost: the four targets. See README.md.
GO ?= go

.PHONY: run test check bench soak wasm fuzz

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

bench: ## Go benchmarks of the hot paths
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s ./...

SIM_SEEDS ?= 100000
soak: ## longer crash runs and the simulator over SIM_SEEDS seeds (bounded)
	SCRIPTHOST_SOAK=1 $(GO) test -run 'Soak|Kill' -timeout 60m ./...
	$(GO) test -run '^TestSimulate$$' -timeout 6h ./runtime -args -sim.seeds=$(SIM_SEEDS)

FUZZTIME ?= 30s
FUZZ_TARGETS = .:FuzzCanonicalJSON sandbox/wasm:FuzzHostCall sandbox/wasm:FuzzLoad hostfuncs:FuzzValidateJSON \
	runtime:FuzzParseDefinition hostfuncs/httptool:FuzzLoad fixture:FuzzParse plan:FuzzParse plan:FuzzParseAuthorization
fuzz: ## every fuzz target for FUZZTIME each (seed corpora in each package's testdata/fuzz)
	@for t in $(FUZZ_TARGETS); do echo "fuzz $$t"; \
	  $(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) ./$${t%%:*} || exit 1; done
