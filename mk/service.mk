# Offload service (offloader/ root, policy, discovery, sweeper, scheduler;
# cmd/offloader run|plan). See configs/offloader.yaml.

# Size of the bench-scan tree: managed ledgers, ledgers in all (shared
# evenly), namespaces.
BENCH_SCAN_MLS        ?= 10000
BENCH_SCAN_LEDGERS    ?= 100000
BENCH_SCAN_NAMESPACES ?= 100

.PHONY: test-service bench-scan check-configs-offloader

## test-service: the offload service's packages and CLI commands.
test-service: compat-prepare
	TIERKEEPER_REQUIRE_PEERS=1 $(GO) test -count=1 ./offloader/ ./offloader/policy/ ./offloader/pressure/ \
	  ./offloader/discovery/ ./offloader/sweeper/ ./offloader/scheduler/ ./cmd/offloader/

## check-configs-offloader: promtool checks of the offload service alert rules and their unit tests.
check-configs-offloader:
	cd configs && promtool check rules offloader-alerts.yaml && promtool test rules offloader-alerts.test.yaml

## bench-scan: discovery scans of BENCH_SCAN_MLS managed ledgers (10 000) / BENCH_SCAN_LEDGERS ledgers in all (100 000) in a real ZooKeeper (seconds, reads, policy evaluation, peak RSS), one /status render of a service on the tree, three replicas' share of the leases.
bench-scan: compat-prepare
	@set -o pipefail; TIERKEEPER_REQUIRE_PEERS=1 TIERKEEPER_BENCH_SCAN_MLS=$(BENCH_SCAN_MLS) \
	  TIERKEEPER_BENCH_SCAN_LEDGERS=$(BENCH_SCAN_LEDGERS) TIERKEEPER_BENCH_SCAN_NAMESPACES=$(BENCH_SCAN_NAMESPACES) \
	  $(GO) test -run '^$$' -bench '^BenchmarkScan$$' -benchtime 1x -timeout 30m ./offloader/discovery/ \
	  | grep -v '^\s*[0-9:.]* \(INFO\|WARN\)\|cds\]'
bench: bench-scan

SOAK_SECONDS ?= 180

.PHONY: bench-soak
## bench-soak: a stock broker under steady produce load while the service offloads by a 30 s policy and trims after 20 s (lag curve in .cache/bench-soak/lag.svg).
bench-soak: compat-prepare
	@set -o pipefail; TIERKEEPER_REQUIRE_PEERS=1 TIERKEEPER_SOAK_SECONDS=$(SOAK_SECONDS) \
	  $(GO) test -run '^$$' -bench '^BenchmarkSoak$$' -benchtime 1x -timeout 30m ./offloader/ \
	  | grep -v '^\s*[0-9:.]* \(INFO\|WARN\|DEBUG\)\|cds\]\|vgw'
