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

APT_PACKAGES :=
DEPS         :=
TEST_DEPS    :=
# Package patterns `make test` runs; `go test` flags for it.
TEST_PKGS    ?= ./...
TEST_FLAGS   ?= -count=1 -timeout 25m

.PHONY: all build test lint fmt vet demo bench compat deps deps-apt proto clean
all: build

include $(sort $(wildcard mk/*.mk))

## deps: install every Debian package and tool the tests and demo need.
deps: deps-apt $(DEPS)

deps-apt:
	@missing=""; for p in $(sort $(APT_PACKAGES)); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

## build: compile every command into bin/.
build:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./cmd/...

## test: unit, fault-injection and real-peer suites (installs what they need).
test: deps $(TEST_DEPS) vet
	@set -o pipefail; TIERKEEPER_REQUIRE_PEERS=1 $(GO) test -json $(TEST_FLAGS) $(TEST_PKGS) \
	  | $(GO) run ./test/testsummary

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

## lint: gofmt, go vet and staticcheck.
lint: vet $(CACHE)/bin/staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(CACHE)/bin/staticcheck ./...

$(CACHE)/bin/staticcheck:
	GOBIN=$(CACHE)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2

## proto: regenerate Go code from internal/*/*.proto.
proto:
	@command -v protoc >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq protobuf-compiler; }
	GOBIN=$(CACHE)/bin $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
	PATH=$(CACHE)/bin:$$PATH protoc --go_out=. --go_opt=paths=source_relative internal/bkproto/*.proto internal/mlproto/*.proto

clean:
	rm -rf $(BIN)
