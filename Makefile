# Hermes Hub — build, test, benchmark, fuzz.
GO ?= go
FUZZTIME ?= 10s
BENCHTIME ?= 1s

.PHONY: all build test vet unit bench fuzz clean

all: build

build:
	$(GO) build -o bin/hub ./cmd/hub

# Everything a change must pass.
test: vet unit

vet:
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi

unit:
	$(GO) test -race -timeout 20m ./...

# Every benchmark of the project; figures are recorded in bench/README.md.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -timeout 60m ./...

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
