# tierkeeper — top-level build. Area-specific targets live in mk/*.mk; each
# fragment may append to APT_PACKAGES (Debian packages it needs), DEPS
# (targets that install tools into .cache) and TEST_DEPS (targets run before
# the tests). Everything downloaded goes to .cache/ (git-ignored).
SHELL      := /bin/bash
ROOT       := $(abspath .)
CACHE      := $(ROOT)/.cache
BIN        := $(ROOT)/bin
GO         ?= go
SUDO       := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
export TIERKEEPER_CACHE := $(CACHE)
export PATH := $(CACHE)/bin:$(PATH)
export GOFLAGS ?= -buildvcs=false

# What every build links into the binaries (internal/cli: --version) and
# make image puts in the image labels: the commit, its time, whether the
# tracked files differ from it, and a version (git describe). -ldflags -X is
# the one way the project stamps builds (Go's own -buildvcs does not work in
# git worktrees nor in a Docker build context without .git).
VCS_REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
VCS_TIME     ?= $(shell git log -1 --format=%cI 2>/dev/null)
VCS_MODIFIED ?= $(shell git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo true || echo false)
VERSION      ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
STAMP_PKG    := github.com/tierkeeper/tierkeeper/internal/cli
LDFLAGS      := -X $(STAMP_PKG).stampedRevision=$(VCS_REVISION) -X $(STAMP_PKG).stampedTime=$(VCS_TIME) \
                -X $(STAMP_PKG).stampedModified=$(VCS_MODIFIED) -X $(STAMP_PKG).stampedVersion=$(VERSION)

# Every install step prints one line (what, where, cached/done) through
# mk/dep.sh; the installers' output goes to .cache/logs/<name>.log and its
# tail is shown on failure.
DEP          := $(ROOT)/mk/dep.sh

APT_PACKAGES :=
DEPS         :=
TEST_DEPS    :=
# Package patterns `make test` runs; `go test` flags for it.
TEST_PKGS    ?= ./...
TEST_FLAGS   ?= -count=1 -timeout 25m
# Of those, the packages `make test` runs under the race detector (instead
# of without it): the ones with goroutines of their own whose tests stay
# fast with -race (each adds seconds, not minutes, on 2 cores). Empty
# RACE_PKGS turns it off.
RACE_PKGS    ?= ./internal/retry ./internal/metrics ./internal/zk ./bookkeeper/wire ./bookkeeper/client \
                ./bookkeeper/metadata ./pulsar/mledger ./pulsar/mledger/status ./offloader/blob ./offloader/blob/fs \
                ./offloader/format/upload ./offloader/discovery
# Of the others, the packages `go test` starts first (it runs them in the
# order given, two at a time on 2 cores): the longest, so that the short
# ones fill the other slot beside them instead of the longest running
# alone at the end.
TEST_FIRST   ?= ./test/compat ./offloader ./bookieagent/cluster ./offloader/pipeline

.PHONY: all build test lint fmt vet demo bench compat deps deps-apt proto clean
all: build

include $(sort $(wildcard mk/*.mk))

## deps: install every Debian package and tool the tests and demo need.
deps: deps-apt $(DEPS)

deps-apt:
	@missing=""; for p in $(sort $(APT_PACKAGES)); do \
	  if dpkg -s $$p >/dev/null 2>&1; then printf '%-24s %-48s cached\n' "$$p" "Debian package"; \
	  else missing="$$missing $$p"; fi; done; \
	if [ -n "$$missing" ]; then \
	  $(DEP) debian-packages "apt-get install$$missing" "" \
	    "$(SUDO) apt-get update && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -o DPkg::Lock::Timeout=600 --no-install-recommends$$missing"; \
	fi

## build: compile every command into bin/.
build:
	@mkdir -p $(BIN)
	@printf '%-24s %-48s %s\n' build "$(BIN:$(ROOT)/%=%)/: $(notdir $(wildcard cmd/*))" "$(VERSION)"
	@$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/...

## test: unit, fault-injection and real-peer suites (installs what they need); RACE_PKGS with -race.
test: deps $(TEST_DEPS) vet
	@set -o pipefail; all=$$($(GO) list $(TEST_PKGS)) || exit 1; \
	race=$$( [ -z "$(strip $(RACE_PKGS))" ] || $(GO) list $(RACE_PKGS) | grep -xF -f <(echo "$$all") ); \
	plain=$$(grep -vxF -f <(echo "$$race") <<<"$$all"); \
	first=$$( [ -z "$(strip $(TEST_FIRST))" ] || $(GO) list $(TEST_FIRST) | grep -xF -f <(echo "$$plain") ); \
	plain=$$( { echo "$$first"; grep -vxF -f <(echo "$$first") <<<"$$plain"; } | grep . ); \
	{ st=0; \
	  if [ -n "$$plain" ]; then TIERKEEPER_REQUIRE_PEERS=1 $(GO) test -json $(TEST_FLAGS) $$plain || st=1; fi; \
	  if [ -n "$$race" ]; then TIERKEEPER_REQUIRE_PEERS=1 $(GO) test -json -race $(TEST_FLAGS) $$race || st=1; fi; \
	  exit $$st; } | $(GO) run ./test/testsummary

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

## lint: gofmt, go vet and staticcheck.
lint: vet $(CACHE)/bin/staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(CACHE)/bin/staticcheck ./...

$(CACHE)/bin/staticcheck:
	@$(DEP) staticcheck .cache/bin/staticcheck "" "GOBIN=$(CACHE)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2"

## proto: regenerate Go code from internal/*/*.proto.
proto:
	@$(DEP) protobuf-compiler "Debian package (protoc)" "command -v protoc" \
	  "$(SUDO) apt-get update && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y protobuf-compiler"
	@$(DEP) protoc-gen-go .cache/bin/protoc-gen-go "test -x $(CACHE)/bin/protoc-gen-go" "GOBIN=$(CACHE)/bin $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12"
	PATH=$(CACHE)/bin:$$PATH protoc --go_out=. --go_opt=paths=source_relative internal/bkproto/*.proto internal/mlproto/*.proto

clean:
	rm -rf $(BIN)
