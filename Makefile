# apserver — run `make help` for the targets.
GO      ?= go
BIN     ?= bin/apserver
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
FUZZTIME ?= 15s

.PHONY: help build generate install test test-go test-vscode e2e lint fuzz bench demo demo-run vscode vscode-real nvim sdk vsix check-generated clean

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

build: ## build bin/apserver
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/apserver

generate: ## regenerate from the schemas (protocol/codex/schema, protocol/apserver/schema): Go method constants, the VS Code extension's protocol.ts, the Neovim plugin's methods.lua
	$(GO) generate ./protocol/

# PREFIX/bin must be on PATH for the docs' examples that call `apserver`.
PREFIX  ?= $(HOME)/.local

install: build ## install bin/apserver as $(PREFIX)/bin/apserver (PREFIX=~/.local by default)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/apserver
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "note: $(PREFIX)/bin is not on PATH; add it, e.g. export PATH=\"$(PREFIX)/bin:\$$PATH\"";; esac

# `make test` runs its suites in two phases, the suites of a phase in
# parallel (make -j; each suite's output is printed whole when it ends):
# the Go tests beside the light Neovim and SDK suites, then the VS Code
# extension (stub tests, then the real-VS-Code suite: one lane, both build
# into editors/vscode). The Go tests do not share a phase with the
# real-VS-Code suite: beside it, on 2 busy cores, timing tests in model/ and
# session/ failed. Every suite runs even when one fails.
test: ## run every test: Go (race detector, e2e over the real binary) beside Neovim and the Codex SDK, then the VS Code extension (stubbed, then in a real VS Code)
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory -j3 --output-sync=target test-go nvim sdk; rc=$$?; \
	$(MAKE) --no-print-directory test-vscode || rc=1; \
	echo "make test: $$( [ $$rc -eq 0 ] && echo passed || echo FAILED) in $$(( $$(date +%s) - start )) s"; exit $$rc

test-go: ## the Go tests only: vet, then every package with the race detector
	for v in 0.169.0 0.171.0; do CODEX_VERSION=$$v ./scripts/install-codex.sh >/dev/null || exit 1; done # the Codex TUIs that e2e/codex_tui_test.go drives (cached per version)
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

e2e: ## run only the end-to-end tests over the real binary
	$(GO) test -race -count=1 ./e2e/

lint: ## go vet, gofmt and staticcheck
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.6.1 ./...

# package:FuzzTarget pairs run by `make fuzz`.
FUZZ_TARGETS := server:FuzzReadLine model:FuzzFastDecode tools/patch:FuzzParse \
	tools/patch:FuzzRoundTrip tools/patch:FuzzUnifiedDiff \
	tools/rules:FuzzEvaluate session:FuzzExplainIsThePlan blueprint:FuzzParsePage \
	tools/files:FuzzReadsStayInside tools/files:FuzzWritesStayInside

fuzz: ## run each fuzz target briefly (FUZZTIME=15s each)
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; echo "== $$pkg $$fn"; \
		$(GO) test ./$$pkg/ -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME); \
	done

bench: build ## Go benchmarks plus the peerbench comparison against Codex (see docs/benchmarks.md)
	$(GO) test -run '^$$' -bench . -benchmem ./server/ ./model/ ./store/ ./tools/ ./tools/checkpoint/
	$(GO) test -run '^$$' -bench . -benchmem ./blueprint/ ./blueprints/
	APSERVER_STREAM_MIB=64 $(GO) test -count=1 -run 'TestEndlessStreamLarge' -v ./e2e/ | grep -E 'streamed|^(ok|FAIL|---)'
	$(GO) build -o bin/benchtool ./bench/benchtool.go && bin/benchtool longthread -bin $(BIN)
	./bench/peerbench.sh

demo: build ## the offline demo: scripted model, temp workspace, live view
	./$(BIN) demo

demo-run: build ## the offline run demo: plan, approve, implement, validate, merge in a temp repository
	./$(BIN) demo run

vscode: ## build, type-check and test the VS Code extension with a stubbed vscode module (installs npm packages and chromium if missing)
	./editors/vscode/test.sh

test-vscode: ## the VS Code extension's lane of make test: vscode, then vscode-real
	./editors/vscode/test.sh
	./editors/vscode/realtest/run.sh

vscode-real: ## the VS Code extension's .vsix in a real VS Code (code-server 4.139.1, installed once and cached) driven by chromium
	./editors/vscode/realtest/run.sh

nvim: ## test the Neovim plugin in Debian's nvim: busted headless, then a tmux session (installs neovim, lua-busted, tmux if missing)
	./editors/nvim/test.sh

sdk: ## drive `apserver exec` with the official Codex SDK (installs its npm package if missing)
	./e2e/sdk/test.sh

vsix: ## package the VS Code extension (linux-x64, bundles apserver)
	./editors/vscode/package.sh

check-generated: ## regenerate Codex's schema from npm @openai/codex and diff it with protocol/codex (needs npm; not in test)
	./scripts/codex-schema.sh

clean: ## remove build output
	rm -rf bin
