# Compat harness (test/compat, test/testenv): real ZooKeeper, BookKeeper
# bookies and Pulsar's own Java code (managed-ledger, jcloud offloader NAR),
# all resolved from Maven Central into .cache/m2 by the Maven project in
# test/compat/java. See docs/compat.md.
COMPAT_JAVA   := test/compat/java
COMPAT_M2     := $(CACHE)/m2
# Override to build against another Pulsar line, e.g. PULSAR_VERSION=4.0.8.
PULSAR_VERSION ?=
COMPAT_MVN    := mvn -B -q -s $(COMPAT_JAVA)/settings.xml -f $(COMPAT_JAVA)/pom.xml \
                 -Dmaven.repo.local=$(COMPAT_M2) $(if $(PULSAR_VERSION),-Dpulsar.version=$(PULSAR_VERSION))
COMPAT_OUT    := $(COMPAT_JAVA)/target/cp.txt
# Holds the PULSAR_VERSION of the last build; rewritten only when it changes,
# so switching versions rebuilds and an unchanged one does not.
COMPAT_PV     := $(COMPAT_JAVA)/target/pulsar-version
COMPAT_SRC    := $(COMPAT_JAVA)/pom.xml $(COMPAT_JAVA)/settings.xml $(shell find $(COMPAT_JAVA)/src -type f 2>/dev/null)

APT_PACKAGES += openjdk-17-jdk-headless maven
DEPS         += compat-prepare
TEST_DEPS    += compat-prepare

.PHONY: compat-prepare compat compat-clean compat-pulsar-version

## compat-prepare: build the Java side (tool, classpath file, jcloud NAR); offline when .cache/m2 is primed.
compat-prepare: $(COMPAT_OUT)
	@if [ -f $(COMPAT_JAVA)/target/.built ]; then rm -f $(COMPAT_JAVA)/target/.built; \
	else printf '%-24s %-48s cached\n' compat-java "$(COMPAT_JAVA)/target, Maven repo $(COMPAT_M2:$(ROOT)/%=%)"; fi

$(COMPAT_PV): compat-pulsar-version
	@mkdir -p $(@D); [ -f $@ ] && [ "$$(cat $@)" = "$(PULSAR_VERSION)" ] || echo "$(PULSAR_VERSION)" > $@

$(COMPAT_OUT): $(COMPAT_SRC) $(COMPAT_PV) | deps-apt
	@mkdir -p $(COMPAT_M2)
	@$(DEP) compat-java "$(COMPAT_JAVA)/target, Maven repo $(COMPAT_M2:$(ROOT)/%=%)" "" \
	  "$(COMPAT_MVN) -o compile || { echo '(offline build failed: resolving from Maven Central)'; $(COMPAT_MVN) compile; }"
	@touch $@ $(COMPAT_JAVA)/target/.built

## compat: only the real-peer suite (ZooKeeper, bookies, S3, Pulsar Java code).
compat: deps compat-prepare
	@set -o pipefail; TIERKEEPER_REQUIRE_PEERS=1 $(GO) test -json $(TEST_FLAGS) ./test/compat/... \
	  | $(GO) run ./test/testsummary

compat-clean:
	rm -rf $(COMPAT_JAVA)/target

.PHONY: bench-bk-read
# Not part of `make bench`: bench-bk (mk/bookkeeper.mk) already measures the
# Java client's reads, next to the Go reader's, on a ledger of the same size.
## bench-bk-read: the Java client's read throughput (BenchmarkBookKeeperReadJava) on the big shared ledger.
bench-bk-read: deps compat-prepare
	TIERKEEPER_REQUIRE_PEERS=1 $(GO) test -run '^$$' -bench 'BookKeeperRead' -benchtime 1x -timeout 30m ./test/compat/
