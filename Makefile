# nextstate — the two commands of the README: `make demo` and `make test`.
# Both install what they need first (scripts/deps.sh) on a fresh Debian machine.

GO        ?= go
BIN       := bin/nextstate
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X github.com/nextstate-rl/nextstate/server.Version=$(VERSION)
FUZZTIME  ?= 10s
PKGS      := ./...

.PHONY: all deps build demo test unit race fuzz bench bench-ws vet clean

all: build

deps:
	@scripts/deps.sh

build: deps
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/nextstate

# The main job on embedded defaults: a server on loopback with a temporary
# store, a scripted agent over every built-in env, and a report.
demo: build
	$(BIN) demo

# The whole suite: vet, every test (with the race detector), and a short fuzz
# run of the wire decoder. Nothing skips in CI: deps.sh installs every
# component the tests need.
test: deps vet race fuzz

vet:
	$(GO) vet $(PKGS)

unit:
	$(GO) test -count=1 $(PKGS)

race:
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeFrame$$' -fuzztime $(FUZZTIME) ./server/
	$(GO) test -run '^$$' -fuzz '^FuzzTopLevel$$' -fuzztime $(FUZZTIME) ./server/

# Speed numbers, never asserted by tests.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s ./gym/... ./server/...

bench-ws: build
	$(BIN) bench ws --sessions 10000 --steps 20 --env echo-v1

clean:
	rm -rf bin
