# Hermes Hub — build, test, benchmark, fuzz.
GO ?= go
FUZZTIME ?= 10s
BENCHTIME ?= 1s

.PHONY: all build test vet cross unit e2e-deps bench bench-deps fuzz clean dist image

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

# go vet, staticcheck (the version go.mod's tool directive pins, the checks
# staticcheck.conf chooses), go.mod and go.sum tidy, and gofmt.
vet:
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	$(GO) mod tidy -diff
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
	# Allocation budgets are measured without the race detector.
	$(GO) test -count=1 -run 'Allocs' ./executor/ ./verbs/

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
	@command -v rg >/dev/null 2>&1 || echo "rg not installed (apt-get install ripgrep): the fs.search comparison will be skipped"
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
	rm -rf bin dist

# Static release binaries, dist/hub-<os>-<arch>: no cgo, no build paths, the
# version (git describe) stamped in, and the VCS revision recorded by the
# toolchain from the git checkout (`hub version` prints both). The revision
# is also stamped, for linked worktrees, where the go tool records none.
DIST_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)

dist:
	@set -e; mkdir -p dist; for p in $(DIST_PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; out=dist/hub-$$os-$$arch; \
	  echo "build $$out ($(VERSION))"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -buildvcs=auto \
	    -ldflags "-s -w -X main.version=$(VERSION) -X main.revision=$(REVISION)" -o $$out ./cmd/hub; \
	done

# The container image (packaging/Dockerfile, FROM scratch) around the linux
# binary of this machine's architecture, with its CA certificates; no
# registry is needed.
IMAGE ?= hermes-hub:$(VERSION)
IMAGE_ARCH ?= $(shell $(GO) env GOARCH)
CA_CERTS ?= /etc/ssl/certs/ca-certificates.crt
# The classic builder builds FROM scratch with no registry and no buildx.
DOCKER_BUILDKIT ?= 0

image: dist
	rm -rf dist/image
	mkdir -p dist/image/state dist/image/workspace
	cp dist/hub-linux-$(IMAGE_ARCH) dist/image/hub
	cp $(CA_CERTS) dist/image/ca-certificates.crt
	cp packaging/Dockerfile packaging/hub.yml dist/image/
	DOCKER_BUILDKIT=$(DOCKER_BUILDKIT) docker build -t $(IMAGE) dist/image

# The reliability lab's soak: ten minutes of steady mixed load with periodic
# faults against a real hub (lab/scenarios/soak.yml); prints its figures
# (turns, crash-window duplicates, RSS min/max). `make test` runs a short
# version of every lab scenario instead.
.PHONY: soak
soak:
	LAB_SOAK=1 $(GO) test -run '^TestSoak$$' -count=1 -timeout 30m -v ./lab/
