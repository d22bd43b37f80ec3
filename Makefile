# scripthost: the four targets. See README.md.
GO ?= go

.PHONY: run test check bench soak wasm fuzz stripe-mock

# Programs the tests run, installed into .tools/ at pinned versions.
STRIPE_MOCK ?= github.com/stripe/stripe-mock@v0.203.0

run: ## run the example workflow end to end on a fresh SQLite ledger in .run/
	./scripts/files/run.sh

wasm: ## build the Go-to-Wasm example workflow
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -o scripts/files-wasm/workflow.wasm ./scripts/files-wasm

test: stripe-mock ## the whole test suite, with the race detector
	SCRIPTHOST_STRIPE_MOCK=$(CURDIR)/.tools/stripe-mock $(GO) test -race -timeout 15m ./...

stripe-mock: ## Stripe's API mock server for the HTTP tool tests, into .tools/ (they skip without it)
	GOBIN=$(CURDIR)/.tools $(GO) install $(STRIPE_MOCK) || echo "make: stripe-mock not installed; the Stripe tests will skip"

check: ## formatting, vet, then the tests
	@test -z "$$(gofmt -l . | grep -v '^bench/')" || { gofmt -l .; exit 1; }
	$(GO) vet ./...
	$(MAKE) test

bench: ## benchmarks of the hot paths next to their references, then the table of ratios
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(or $(BENCHTIME),1s) ./... 2>&1 | $(GO) run ./internal/benchtable

soak: ## longer crash and fuzz runs (bounded)
	SCRIPTHOST_SOAK=1 $(GO) test -run 'Soak|Kill' -timeout 60m ./...

fuzz: ## bounded fuzz runs of the encoders (FUZZTIME each, default 30s)
	$(GO) test -run '^$$' -fuzz FuzzFormRoundTrip -fuzztime $(or $(FUZZTIME),30s) ./hostfuncs/httptool
