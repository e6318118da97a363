# nextstate — the two commands of the README: `make demo` and `make test`.
# Both install what they need first (scripts/deps.sh) on a fresh Debian machine.

GO        ?= go
BIN       := bin/nextstate
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X github.com/nextstate-rl/nextstate/server.Version=$(VERSION)
FUZZTIME  ?= 10s
PYTHON    ?= /usr/bin/python3
PKGS      := ./...

.PHONY: all deps build image demo learn learn-live test unit race fuzz python-test slime-check leaks leaks-start bench bench-ws bench-sandbox vet clean

all: build

deps:
	@scripts/deps.sh

build: deps
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/nextstate

# The default sandbox image, nextstate/base, from Debian packages (no image
# registry): built once, then reused by its tag; the rootfs tarball is cached
# in ~/.cache/nextstate/images. IMAGE_FLAGS=--force re-imports it.
image: build
	$(BIN) image build $(IMAGE_FLAGS)

# The main job on embedded defaults: a server on loopback with a temporary
# store, a scripted agent over every built-in env, and a report; then a short
# training run (a tiny model from scratch, warm-started on two demonstrators
# of guess-v1, 20 RL steps, about seven minutes here) with its report.html,
# held-out pass@1 before and after (README, "Learning, shown on this
# machine").
DEMO_LEARN ?= $(or $(TMPDIR),/tmp)/nextstate-demo-learn
demo: build
	$(BIN) demo
	rm -rf $(DEMO_LEARN)
	SHORT=1 OUT=$(DEMO_LEARN) BIN=$(BIN) scripts/learn.sh

# Learning shown on this machine: SFT from scratch, then RL on two env kinds
# at once (guess-v1 and BFCL multi-turn vehicle cases, examples/learn) with
# three signals (outcome; + process rewards; + OPD), held-out pass@1 per
# suite before, during and after (runs/learn, learn.svg).
learn: build
	BIN=$(BIN) scripts/learn.sh

# A personal agent learning while it is used: simulated users talk to a tiny
# model behind nextstate train --proxy; compliance with each user's
# preference per session, binary RL vs OPD vs both, and an adversarial user
# against the defences (runs/live, live.svg; README, "Learning while used").
learn-live: build
	BIN=$(BIN) scripts/learn-live.sh

# The whole suite: vet, every test (with the race detector), and a short fuzz
# run of the wire decoder. Nothing skips in CI: deps.sh installs every
# component the tests need and starts dockerd, and `image` builds the base
# image the sandbox tests run.
test: deps image leaks-start vet race fuzz python-test leaks

vet:
	$(GO) vet $(PKGS)

# Nothing the tests started may outlive them: containers, images, processes,
# temporary directories.
leaks-start:
	scripts/check-leaks.sh start .leaks-baseline

leaks:
	scripts/check-leaks.sh check .leaks-baseline

unit:
	$(GO) test -count=1 $(PKGS)

race:
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeFrame$$' -fuzztime $(FUZZTIME) ./server/
	$(GO) test -run '^$$' -fuzz '^FuzzTopLevel$$' -fuzztime $(FUZZTIME) ./server/

# The Python client (clients/python): the slime adapter's conversion, and the
# protocol conformance tests against a loopback server the script starts and stops.
python-test: build
	NEXTSTATE_BIN=$(BIN) PYTHON=$(PYTHON) clients/python/run_tests.sh

# The slime adapter against upstream slime's own code (clients/python/slime_check.py):
# SLIME_DIR is a checkout of github.com/THUDM/slime. Not part of `test`: CI has none.
slime-check: build
	@test -n "$(SLIME_DIR)" || { echo "make slime-check: set SLIME_DIR to a checkout of github.com/THUDM/slime" >&2; exit 2; }
	SLIME_DIR=$(SLIME_DIR) NEXTSTATE_BIN=$(BIN) PYTHONDONTWRITEBYTECODE=1 $(PYTHON) clients/python/slime_check.py

# Speed numbers, never asserted by tests.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s ./gym/... ./server/...

# Sandbox latencies (p50/p99 per operation) on the local docker engine.
bench-sandbox: image
	$(GO) test -run '^$$' -bench . -benchtime 20x ./sandbox/docker/

bench-ws: build
	$(BIN) bench ws --sessions 10000 --steps 20 --env echo-v1

clean:
	rm -rf bin
