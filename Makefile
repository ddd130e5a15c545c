# Hermes Hub — build, test, benchmark, fuzz.
GO ?= go
FUZZTIME ?= 10s
BENCHTIME ?= 1s

.PHONY: all build test deps vet cross unit e2e-deps bench bench-deps fuzz clean dist image

# Folders whose package-lock.json pins the npm packages the end-to-end tests
# drive (playwright-core for the web panel, telegram-test-api for Telegram,
# the MCP TypeScript SDK, and the MCP conformance suite with the Node.js 22
# it runs on).
E2E_DIRS := $(dir $(wildcard adapters/*/e2e/package-lock.json adapters/mcp/conformance/package-lock.json))

# Where they are installed: outside the working tree, one directory per
# folder and version of its lock, <NPM_CACHE>/<folder>/<first 12 hex digits
# of the lock's SHA-256>/node_modules, where the tests look
# (internal/testkit.NPMPackages). About 290 MB, 236 MB of it the Node.js
# of the conformance suite.
NPM_CACHE ?= $(or $(HUB_NPM_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/hermes-hub/npm)
export HUB_NPM_CACHE := $(NPM_CACHE)

# npm-install installs the npm packages of the folders $(1) that are not
# installed yet: npm ci in a fresh directory, renamed into place once
# complete, so that a run cut short or two checkouts installing at once
# never leave a half-installed one.
define npm-install
@if ! command -v npm >/dev/null 2>&1; then \
  echo "npm not installed: the tests that need its packages will be skipped (make deps installs it)"; exit 0; fi; \
for d in $(1); do \
  d=$${d%/}; sum=$$(sha256sum $$d/package-lock.json | cut -c1-12); dest="$(NPM_CACHE)/$$d/$$sum"; \
  [ -f "$$dest/node_modules/.package-lock.json" ] && continue; \
  echo "npm ci for $$d in $$dest"; mkdir -p "$(NPM_CACHE)/$$d"; \
  tmp=$$(mktemp -d "$(NPM_CACHE)/$$d/.install.XXXXXX") && cp $$d/package.json $$d/package-lock.json "$$tmp/" && \
  (cd "$$tmp" && npm ci --no-audit --no-fund --loglevel=error) && \
  { mv -T "$$tmp" "$$dest" 2>/dev/null || rm -rf "$$tmp"; } || { rm -rf "$$tmp"; exit 1; }; \
done
endef

all: build

build:
	$(GO) build -o bin/hub ./cmd/hub

# Everything a change must pass.
test: vet cross e2e-deps unit

# What the tests need besides Go (chromium, tmux, busybox-static, a Docker
# daemon, node and npm: .ci/deps, which .ci/run uses too), then the npm
# packages of the end-to-end tests.
deps:
	.ci/deps
	$(MAKE) e2e-deps

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

# The tests with the race detector, through internal/testreport: go test's
# usual output, then the skipped tests with their reasons and the slowest
# packages and tests (TEST_JSON=FILE keeps every event, with its timing).
# Packages run TEST_P at a time, and a package's parallel tests
# TEST_PARALLEL at a time, more than the CPUs: many wait on processes,
# daemons and browsers more than they compute. go test starts them in the
# order it is given them, so the longest (TEST_FIRST, from the timings of
# TEST_JSON) start first instead of ending the run alone. Allocation
# budgets are measured without the race detector, first.
TEST_P ?= 4
TEST_PARALLEL ?= 4
TEST_FIRST ?= ./cmd/hub ./lab ./workspaces/docker ./nodes ./outbox ./adapters/discord ./adapters/web ./hub ./packaging ./verbs
TEST_JSON ?=
unit:
	$(GO) test -count=1 -run 'Allocs' ./executor/ ./verbs/ ./cmd/hub/
	$(GO) run ./internal/testreport -go $(GO) $(if $(TEST_JSON),-json $(TEST_JSON)) -- -race -timeout 20m -p $(TEST_P) -parallel $(TEST_PARALLEL) $(TEST_FIRST) ./...

# npm packages for the end-to-end tests, installed under NPM_CACHE (never
# globally, never in the working tree). Without npm the end-to-end tests
# skip and say why.
e2e-deps:
	$(call npm-install,$(E2E_DIRS))

# Every benchmark of the project; figures are recorded in bench/README.md.
bench: bench-deps
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -timeout 60m ./...

# The MCP reference filesystem server for the comparison in bench/mcp,
# installed under NPM_CACHE like the end-to-end tests' packages. Without
# npm it is skipped.
bench-deps:
	@command -v rg >/dev/null 2>&1 || echo "rg not installed (apt-get install ripgrep): the fs.search comparison will be skipped"
	$(call npm-install,bench/mcp)

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
# registry is needed. packaging/context.sh prepares its context in
# dist/image. image-busybox adds a userland for proc.run (the static
# busybox of the build machine, Debian's busybox-static, and a link per
# applet): hermes-hub:<version>-busybox, from dist/image-busybox.
IMAGE ?= hermes-hub:$(VERSION)
IMAGE_ARCH ?= $(shell $(GO) env GOARCH)
CA_CERTS ?= /etc/ssl/certs/ca-certificates.crt
BUSYBOX ?= /bin/busybox
# The classic builder builds FROM scratch with no registry and no buildx.
DOCKER_BUILDKIT ?= 0

.PHONY: image-busybox
image: dist
	packaging/context.sh dist/image dist/hub-linux-$(IMAGE_ARCH) $(CA_CERTS)
	DOCKER_BUILDKIT=$(DOCKER_BUILDKIT) docker build -t $(IMAGE) dist/image

image-busybox: dist
	packaging/context.sh dist/image-busybox dist/hub-linux-$(IMAGE_ARCH) $(CA_CERTS) $(BUSYBOX)
	DOCKER_BUILDKIT=$(DOCKER_BUILDKIT) docker build -t $(IMAGE)-busybox dist/image-busybox

# The reliability lab's soak: ten minutes of steady mixed load with periodic
# faults against a real hub (lab/scenarios/soak.yml); prints its figures
# (turns, crash-window duplicates, RSS min/max). `make test` runs a short
# version of every lab scenario instead.
.PHONY: soak
soak:
	LAB_SOAK=1 $(GO) test -run '^TestSoak$$' -count=1 -timeout 30m -v ./lab/
