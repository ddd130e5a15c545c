# Hermes Hub — build, test, benchmark, fuzz.
GO ?= go
FUZZTIME ?= 10s
BENCHTIME ?= 1s

.PHONY: all build test vet cross unit e2e-deps bench bench-deps fuzz clean

# Folders whose package-lock.json pins the npm packages the end-to-end tests
# drive (playwright-core for the web panel, telegram-test-api for Telegram,
# the MCP TypeScript SDK, and the MCP conformance suite with the Node.js 22
# it runs on).
E2E_DIRS := $(dir $(wildcard adapters/*/e2e/package-lock.json adapters/mcp/conformance/package-lock.json))

all: build

build:
	$(GO) build -o bin/hub ./cmd/hub

# Everything a change must pass.
test: vet cross e2e-deps unit

vet:
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi

# The platforms besides Linux the hub builds for (see README.md,
# "Platforms"): every package and its tests are type-checked and vetted
# for each, and the binary is built.
CROSS_PLATFORMS ?= darwin/amd64 darwin/arm64 windows/amd64

cross:
	@set -e; for p in $(CROSS_PLATFORMS); do \
	  echo "vet and build for $$p"; \
	  GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet ./...; \
	  GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -o /dev/null ./cmd/hub; \
	done

unit:
	$(GO) test -race -timeout 20m ./...

# npm packages for the end-to-end tests, installed into each e2e folder
# (never globally). Without npm the end-to-end tests skip and say why.
e2e-deps:
	@if ! command -v npm >/dev/null 2>&1; then \
	  echo "npm not installed: end-to-end tests will be skipped"; exit 0; fi; \
	for d in $(E2E_DIRS); do \
	  if [ ! -f $$d/node_modules/.package-lock.json ] || [ $$d/package-lock.json -nt $$d/node_modules/.package-lock.json ]; then \
	    echo "npm ci in $$d"; (cd $$d && npm ci --no-audit --no-fund --loglevel=error) || exit 1; \
	  fi; \
	done

# Every benchmark of the project; figures are recorded in bench/README.md.
bench: bench-deps
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -timeout 60m ./...

# The MCP reference filesystem server for the comparison in bench/mcp,
# installed into that folder (never globally). Without npm it is skipped.
bench-deps:
	@if ! command -v npm >/dev/null 2>&1; then \
	  echo "npm not installed: the MCP comparison will be skipped"; exit 0; fi; \
	if [ ! -f bench/mcp/node_modules/.package-lock.json ] || [ bench/mcp/package-lock.json -nt bench/mcp/node_modules/.package-lock.json ]; then \
	  echo "npm ci in bench/mcp"; cd bench/mcp && npm ci --no-audit --no-fund --loglevel=error; \
	fi

# A short run of every fuzz target, one after the other.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for t in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/^func //'); do \
	    echo "== $$pkg $$t"; \
	    $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

clean:
	rm -rf bin

# The reliability lab's soak: ten minutes of steady mixed load with periodic
# faults against a real hub (lab/scenarios/soak.yml); prints its figures
# (turns, crash-window duplicates, RSS min/max). `make test` runs a short
# version of every lab scenario instead.
.PHONY: soak
soak:
	LAB_SOAK=1 $(GO) test -run '^TestSoak$$' -count=1 -timeout 30m -v ./lab/
