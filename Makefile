# apserver — run `make help` for the targets.
GO      ?= go
BIN     ?= bin/apserver
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
FUZZTIME ?= 15s

.PHONY: help build test e2e lint fuzz bench demo clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: ## build bin/apserver
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/apserver

test: ## run every test with the race detector (unit, e2e over the real binary, demo)
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

e2e: ## run only the end-to-end tests over the real binary
	$(GO) test -race -count=1 ./e2e/

lint: ## go vet, gofmt and staticcheck
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) run honnef.co/go/tools/cmd/staticcheck@2025.1.1 ./...

fuzz: ## run each fuzz target briefly (FUZZTIME=15s)
	$(GO) test ./server/ -run '^$$' -fuzz '^FuzzReadLine$$' -fuzztime $(FUZZTIME)

bench: build ## Go benchmarks plus the peerbench comparison against Codex (see docs/benchmarks.md)
	$(GO) test -run '^$$' -bench . -benchmem ./server/ ./model/ ./store/
	./bench/peerbench.sh

demo: build ## the offline demo: scripted model, temp workspace, live view
	./$(BIN) demo

clean: ## remove build output
	rm -rf bin
