# podbot build, test and demo targets. Everything a target needs it installs
# itself, idempotently: a fresh Debian machine as root needs only `make demo`
# and `make check`.

SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(HOME)/go/bin:$(PATH)
export GOFLAGS := -buildvcs=false

BIN        := $(CURDIR)/bin
VERSION    := $(shell sed -n 's/^const Version = "\(.*\)"/\1/p' version.go)
LDFLAGS    := -s -w
GO_PKGS    := $(shell go list ./... 2>/dev/null | grep -v /e2e)
ENGINES    := scripts/engines.sh
K8S        := scripts/k8s.sh
FUZZTIME   ?= 10s

.PHONY: all build deps peers engines engines-down k8s k8s-down image image-acp demo check vet fmt-check test race test-e2e test-k8s bench bench-k8s fuzz clean

all: build

## build: podbot, its companion podbot-kube (the same CLI with the kubernetes
## backend and client-go, -tags kubernetes; podbot hands kubernetes commands to it)
## and the static in-container sidecar into ./bin
build:
	@mkdir -p $(BIN)
	go build -ldflags '$(LDFLAGS)' -o $(BIN)/podbot ./cmd/podbot
	go build -tags kubernetes -ldflags '$(LDFLAGS)' -o $(BIN)/podbot-kube ./cmd/podbot
	CGO_ENABLED=0 go build -ldflags '$(LDFLAGS)' -o $(BIN)/podbot-sidecar ./cmd/podbot-sidecar

## deps: Go modules (and, later, the npm test peers)
deps:
	go mod download

## engines: install (if missing) and start Podman and dockerd on private sockets
engines:
	$(ENGINES) up

engines-down:
	$(ENGINES) down

## k8s: build (first run only) and start the single-node test cluster, loopback only;
## point kubectl at it with: source <(scripts/k8s.sh env)
k8s: engines image
	source <($(ENGINES) env) && $(K8S) up

k8s-down:
	$(K8S) down

# Agent CLIs baked into the agent image (claude, codex, opencode, droid,
# claude-acp, codex-acp, gemini, or none; goose needs --goose-artifact), and the
# host's extra CA certificates, which npm needs inside the build when a
# TLS-intercepting proxy stands between this machine and the registry.
PODBOT_AGENTS ?= claude,codex
CA_CERTS      := $(foreach c,$(wildcard /usr/local/share/ca-certificates/*.crt),--ca-cert $(c))

## image: build the sandbox image and the agent image (nested Podman, agent
## CLIs) on both engines without a registry; each is skipped when current
image: build engines
	source <($(ENGINES) env) && \
	  $(BIN)/podbot --engine-socket "$$PODBOT_E2E_PODMAN_SOCKET" image build --bootstrap --agents $(PODBOT_AGENTS) $(CA_CERTS) && \
	  $(BIN)/podbot --engine-socket "$$PODBOT_E2E_DOCKER_SOCKET" image build --bootstrap --agents $(PODBOT_AGENTS) $(CA_CERTS)

## image-acp: the ACP agents' test image (localhost/podbot-agent-acp-e2e, built by the e2e
## test TestACPImageBuild with a stand-in Goose) on both engines, outside test-e2e's timeout;
## skipped when current (about 3 minutes per engine when not)
image-acp: build engines image
	source <($(ENGINES) env) && \
	  PODBOT_E2E_BIN=$(BIN) go test -tags e2e -count=1 -timeout 30m -run '^TestACPImageBuild$$' ./e2e/

## demo: podbot's main job end to end on this machine: a sample repository
## on a local git server, cloned into a sandbox, Codex against a mock model
demo: build engines peers image
	source <($(ENGINES) env) && \
	  $(BIN)/podbot --engine-socket "$$PODBOT_E2E_PODMAN_SOCKET" doctor || true
	PODBOT_DEMO_ENGINE=podman scripts/demo.sh
	PODBOT_DEMO_ENGINE=docker scripts/demo.sh

## check: everything CI runs: vet, gofmt, unit tests under -race (which replay every fuzz
## target's seed and saved corpus), e2e on both engines. Open-ended fuzzing is `make fuzz`:
## a new random finding must not turn an unrelated CI run red.
## The e2e suite needs the agent image's nested Podman, not its agent CLIs, so check builds it
## without them (the CLIs add minutes); make demo builds the full image.
check: PODBOT_AGENTS = none
check: vet fmt-check race test-e2e test-k8s

vet:
	go vet ./...
	go vet -tags kubernetes ./...
	go vet -tags e2e ./e2e/...
	go vet -tags 'e2e kubernetes' ./e2e/...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

## test: unit tests only (no engine needed)
test:
	go test $(GO_PKGS)
	go test -tags kubernetes . ./cmd/podbot
	go test -tags purego ./acp/

race:
	go test -race $(GO_PKGS)
	go test -race -tags kubernetes . ./cmd/podbot
	go test -race -tags purego ./acp/

## peers: the real third-party peers the e2e suite drives (npm, pinned)
peers:
	scripts/peers.sh install
	scripts/peers.sh bundle

## test-e2e: real Podman and real dockerd (started here), real peers
test-e2e: build engines peers image image-acp
	source <($(ENGINES) env) && source <(scripts/peers.sh env) && \
	  PODBOT_E2E_BIN=$(BIN) go test -tags e2e -count=1 -timeout 40m -v -skip '^TestK8s' ./e2e/ 2>&1 | tee $(CURDIR)/.e2e.out | grep -E '^(=== RUN|--- |PASS|FAIL|ok|panic)|e2e_test' ; \
	  exit $${PIPESTATUS[0]}

## test-k8s: the Kubernetes e2e tests against a real single-node cluster built from
## source (scripts/k8s.sh up: etcd, control plane, kubelet over containerd and runc,
## the sandbox image imported without a registry). The cluster stays up for the next
## run; `make k8s-down` stops it.
test-k8s: build engines peers image
	source <($(ENGINES) env) && source <(scripts/peers.sh env) && $(K8S) up && source <($(K8S) env) && \
	  PODBOT_E2E_BIN=$(BIN) go test -tags 'e2e kubernetes' -count=1 -timeout 15m -v -run '^TestK8s' ./e2e/ 2>&1 | tee $(CURDIR)/.e2e-k8s.out | grep -E '^(=== RUN|--- |PASS|FAIL|ok|panic)|k8s_cluster_test' ; \
	  exit $${PIPESTATUS[0]}

## bench: hot-path benchmarks, each printed with its ratio to a baseline measured in the same run
bench: build engines peers image
	go test -run '^$$' -bench . -benchmem $(GO_PKGS)
	source <($(ENGINES) env) && source <(scripts/peers.sh env) && \
	  PODBOT_E2E_BIN=$(BIN) go test -tags e2e -run '^$$' -bench . -benchtime 50x ./e2e/

## bench-k8s: the kubernetes backend at scale on kwok's simulated nodes (scripts/k8s.sh
## kwok up; Pods need not run): 100 sandboxes created and 100 warm pool claims, p50/p99
## beside a bare Pod create measured in the same run; kwok and its nodes are removed after
bench-k8s: build engines image
	source <($(ENGINES) env) && $(K8S) up && $(K8S) kwok up && source <($(K8S) env) && \
	  { PODBOT_E2E_BIN=$(BIN) go test -tags 'e2e kubernetes' -count=1 -timeout 25m -run '^$$' -bench '^BenchmarkK8sKwok$$' -benchtime 1x ./e2e/; \
	    rc=$$?; $(K8S) kwok down; exit $$rc; }

## fuzz: a short run of every fuzz target
fuzz:
	@scripts/fuzz.sh $(FUZZTIME) $(GO_PKGS)

clean:
	rm -rf $(BIN)
