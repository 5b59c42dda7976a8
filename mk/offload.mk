# The offload pipeline (offloader/pipeline, cmd/offloader offload|status|verify)
# and the demo (test/demo: the service on the embedded stack). See docs/offload.md.

# Benchmark knobs: ledger sizes in MiB (the first is the throughput ledger),
# paired rounds, parts in flight, random seeks per block size, block sizes
# (MiB) of the seek table.
BENCH_OFFLOAD_MIB    ?= 1024,2048
BENCH_OFFLOAD_ROUNDS ?= 3
BENCH_OFFLOAD_PARTS  ?= 2
BENCH_OFFLOAD_SEEKS  ?= 16
BENCH_OFFLOAD_BLOCKS ?= 5,8,10,12,16,64
# Run only some parts: a comma list of throughput, rss, seeks (default all),
# or reads / copies: the read alone / the copy of this tree against
# BENCH_BASE_REV's (or BENCH_BASE_ENV's), 5 alternated pairs per round, the
# paired CPU and MB/s ratios' medians and 95 % intervals (not in the default
# run: they need a base; one run's interval understates the noise between
# runs: confirm a change the other way round too).
BENCH_OFFLOAD_ONLY   ?=
# A git revision whose offloader is measured too (before/after; also used by
# bench-offload-producing). bench-offload needs one that reports copyCost.
BENCH_BASE_REV       ?=
# VAR=value,... set for the base's offloader process; without BENCH_BASE_REV
# the base is this tree (e.g. BENCH_BASE_ENV=GOMAXPROCS=1).
BENCH_BASE_ENV       ?=
# key=value,... added to the S3 store's config (offloader and raw PUT alike),
# e.g. checksum=md5 or payload_signing=unsigned.
BENCH_OFFLOAD_STORE_OPTIONS ?=
# 1: before every step of a round, write and delete 4x the ledger plus
# 1 GiB of page cache (on /dev/shm), so every step finds the same recently used free
# memory (on a VM whose host takes freed memory back, a step that follows
# a deletion would otherwise find it and the others pay the host's faults);
# 0: no priming.
BENCH_OFFLOAD_PRIME_MEMORY ?= 1
# 1: the store speaks HTTPS only (a test CA), as production stores do: the
# copy, the raw PUT and Pulsar's offloader encrypt what they upload, and
# the bare relay runs again with its sink behind TLS (the floor over TLS).
BENCH_OFFLOAD_TLS ?= 0
# Where the store (versitygw) keeps its data: tmp (the temporary directory,
# ext4 here: completing a multipart upload copies the parts into the
# object), or xfs-reflink (an XFS loop file system with reflink, made and
# removed by the benchmark, root only: the completion clones the parts).
BENCH_OFFLOAD_STORE_FS ?= tmp
# 1: the warm-up copy is also recorded with Linux perf (every CPU, kernel
# stacks included) and the offloader's samples are split by what they were
# doing (encryption, socket reads and writes, loopback receive, page
# faults, ...); needs perf (Debian's linux-perf, installed by make deps
# only when BENCH_OFFLOAD_PERF=1 is given) and root or
# kernel.perf_event_paranoid <= 0. The data stays in
# TK_BENCH_PROFILE_DIR when that is set. That warm-up runs without Go's
# profiles, whose stack walks would count as the copy's user time.
BENCH_OFFLOAD_PERF ?= 0
ifeq ($(BENCH_OFFLOAD_PERF),1)
APT_PACKAGES += linux-perf
endif
# mkfs.xfs for BENCH_OFFLOAD_STORE_FS=xfs-reflink (testenv.ReflinkFS).
APT_PACKAGES += xfsprogs

.PHONY: test-offload bench-offload bench-offload-producing bench-sim

## demo: the main job on 127.0.0.1: ZooKeeper, 3 bookies, versitygw and a stock Pulsar broker; messages produced, offloader plan, offloader run offloads by policy (live status on a terminal), all read back through the broker, a report (< 3 min after make deps). Its first line says what it does and how long it takes; each dependency is one line.
# Only what the demo runs (make deps also installs the test-only tools,
# e.g. helm).
DEMO_DEPS := deps-apt dep-versitygw compat-prepare
demo: demo-banner $(DEMO_DEPS) build
	@$(GO) run ./test/demo --offloader $(BIN)/offloader

# The demo's first line: what it does and how long it takes (prerequisites
# run left to right, so this comes before the install lines).
.PHONY: demo-banner
demo-banner:
	@echo "make demo: installs what is missing, one line each (first run on a fresh machine ≈ 3-4 min: JDK 17 and Maven from Debian, Pulsar's and BookKeeper's jars from Maven Central, versitygw), then offloads on 127.0.0.1 (≈ 1-2 min): ZooKeeper, 3 bookies, versitygw and a Pulsar broker start, 2050 messages are produced, offloader plan and offloader run move them to the store by policy, a reader reads all back through the broker."


## test-offload: the pipeline, CLI and end-to-end offload suites (real peers).
test-offload: deps compat-prepare
	TIERKEEPER_REQUIRE_PEERS=1 $(GO) test -count=1 ./offloader/pipeline/ ./offloader/brokeradmin/ ./cmd/offloader/
	TIERKEEPER_REQUIRE_PEERS=1 $(GO) test -count=1 -run 'TestOffload|TestBrokerReadsGoOffload' ./test/compat/

## bench-offload: pipeline MB/s vs a raw multipart PUT, the bookie read alone and Pulsar's offloader on a >= 1 GiB ledger, the copy's share of 1/(1/read + 1/put) per round and where its time went (a timeline of every copy: waiting for a free block, for the bookies, copying, finishing, with the bookies', versitygw's and the machine's CPU), the machine's CPU the copy cost against the read alone and the raw PUT together and the share it could reach at their cost, CPU seconds per GiB of the copy vs Pulsar's JVM and vs a bare relay of the same bytes at the copy's rate (the floor on that machine; with BENCH_OFFLOAD_TLS=1 also through the store client's TLS connection), allocations and page faults per GiB, the free memory each step took (every step starts with the same, BENCH_OFFLOAD_PRIME_MEMORY) and the most page cache it held dirty (what the store's completion writes back), a profile of the copy (after the bookies' read path is warmed until their CPU per GiB settles); BENCH_OFFLOAD_TLS=1 puts the store behind HTTPS, BENCH_OFFLOAD_STORE_FS=xfs-reflink its data on a reflink file system; BENCH_OFFLOAD_PERF=1 splits the warm-up copy's CPU with perf, kernel included; BENCH_BASE_REV=<rev> adds that revision's copy to every round; peak RSS at 1 and 2 GiB, bytes Pulsar's reader fetches per random seek by block size (~15 min).
bench-offload: deps compat-prepare
	@set -o pipefail; TIERKEEPER_REQUIRE_PEERS=1 TK_BENCH_OFFLOAD_MIB=$(BENCH_OFFLOAD_MIB) TK_BENCH_ROUNDS=$(BENCH_OFFLOAD_ROUNDS) TK_BENCH_BASE_REV=$(BENCH_BASE_REV) TK_BENCH_BASE_ENV=$(BENCH_BASE_ENV) \
	  TK_BENCH_STORE_OPTIONS=$(BENCH_OFFLOAD_STORE_OPTIONS) TK_BENCH_PARTS=$(BENCH_OFFLOAD_PARTS) TK_BENCH_SEEKS=$(BENCH_OFFLOAD_SEEKS) TK_BENCH_SEEK_BLOCKS=$(BENCH_OFFLOAD_BLOCKS) TK_BENCH_ONLY=$(BENCH_OFFLOAD_ONLY) TK_BENCH_PRIME_MEMORY=$(BENCH_OFFLOAD_PRIME_MEMORY) TK_BENCH_TLS=$(BENCH_OFFLOAD_TLS) TK_BENCH_STORE_FS=$(BENCH_OFFLOAD_STORE_FS) TK_BENCH_BOOKIE_PULSAR_JVM=$(BENCH_BOOKIE_PULSAR_JVM) TK_BENCH_PERF=$(BENCH_OFFLOAD_PERF) \
	  $(GO) test -count=1 -run '^$$' -bench '^BenchmarkOffload$$' -benchtime 1x -timeout 90m -v ./test/offloadbench/ \
	  | grep -E '^(Benchmark|    (bench|perf)_test|ok|FAIL|---)' | sed -E 's/^    (bench|perf)_test.go:[0-9]*: //'

bench: bench-offload

## bench-offload-producing: the producer's stall (max publish latency, longest ack gap, topic reloads) while offloads commit on its topic, with a stock broker; BENCH_BASE_REV=<rev> adds the offloader built at that revision, BENCH_PRODUCING_SIZE the message bytes; then duplicates and ledgers per hour while `offloader run` offloads every closed ledger, with and without scheduler.min_reload_interval (~18 min).
BENCH_PRODUCING_ROUNDS ?= 3
BENCH_PRODUCING_SIZE   ?= 1500
bench-offload-producing: deps compat-prepare
	@set -o pipefail; TIERKEEPER_REQUIRE_PEERS=1 TK_BENCH_ROUNDS=$(BENCH_PRODUCING_ROUNDS) TK_BENCH_SIZE=$(BENCH_PRODUCING_SIZE) TK_BENCH_BASE_REV=$(BENCH_BASE_REV) \
	  $(GO) test -count=1 -run '^$$' -bench '^Benchmark(Offload|Service)WhileProducing$$' -benchtime 1x -timeout 90m -v ./test/offloadbench/ \
	  | grep -E '^(Benchmark|    (service_)?producing_test|ok|FAIL|---)' | sed -E 's/^    (service_)?producing_test.go:[0-9]*: //'

bench: bench-offload-producing

## bench-catchup: a Pulsar Reader catching up from the earliest position through a stock broker over BENCH_CATCHUP_MIB of messages offloaded by tierkeeper (one topic per block size in BENCH_CATCHUP_BLOCKS) and by the broker's own offloader (64 MiB blocks): MB/s, time to the first message, bytes fetched from the store (a counting proxy in front of versitygw), side by side (~12 min at 1 GiB).
BENCH_CATCHUP_MIB        ?= 1024
BENCH_CATCHUP_MSG        ?= 65536
BENCH_CATCHUP_LEDGER_MIB ?= 256
BENCH_CATCHUP_BLOCKS     ?= 10,64
BENCH_CATCHUP_ROUNDS     ?= 3
BENCH_CATCHUP_WARM_MIB   ?= 1024
# a file: one line per GET the broker sends to the store (the store's time, the body's, and how long the broker was quiet before it)
BENCH_CATCHUP_TRACE      ?=
.PHONY: bench-catchup
bench-catchup: deps compat-prepare
	@set -o pipefail; TIERKEEPER_REQUIRE_PEERS=1 TK_BENCH_CATCHUP_MIB=$(BENCH_CATCHUP_MIB) TK_BENCH_CATCHUP_MSG=$(BENCH_CATCHUP_MSG) \
	  TK_BENCH_CATCHUP_LEDGER_MIB=$(BENCH_CATCHUP_LEDGER_MIB) TK_BENCH_CATCHUP_BLOCKS=$(BENCH_CATCHUP_BLOCKS) TK_BENCH_ROUNDS=$(BENCH_CATCHUP_ROUNDS) TK_BENCH_CATCHUP_WARM_MIB=$(BENCH_CATCHUP_WARM_MIB) TK_BENCH_CATCHUP_TRACE=$(BENCH_CATCHUP_TRACE) \
	  $(GO) test -count=1 -run '^$$' -bench '^BenchmarkCatchup$$' -benchtime 1x -timeout 90m -v ./test/offloadbench/ \
	  | grep -E '^(Benchmark|    catchup_test|ok|FAIL|---)' | sed 's/^    catchup_test.go:[0-9]*: //'
bench: bench-catchup

BENCH_SCRUB_LEDGERS ?= 10000
.PHONY: bench-scrub
## bench-scrub: one unthrottled scrub pass over 10 000 committed ledgers generated straight into ZooKeeper and versitygw (ledgers/s, objects/s, requests per ledger, load average).
bench-scrub: compat-prepare
	@set -o pipefail; TIERKEEPER_REQUIRE_PEERS=1 TIERKEEPER_BENCH_SCRUB_LEDGERS=$(BENCH_SCRUB_LEDGERS) \
	  $(GO) test -count=1 -run '^$$' -bench '^BenchmarkScrub$$' -benchtime 1x -timeout 30m ./offloader/ \
	  | grep -E '^(built|scrub pass|load average|Benchmark|ok|FAIL|---)'
bench: bench-scrub

## bench-sim: the deterministic simulation of the offload protocol (offloader/sim): BENCH_SIM_INTERLEAVINGS scheduling decisions from seed 1 (replicas, CLI runs, a Pulsar broker model; crashes, lost requests, expiries, partitions), invariants after every one; prints interleavings/s and the shrunk trace of every finding (~1 min per 100 000).
BENCH_SIM_INTERLEAVINGS ?= 100000
bench-sim:
	$(GO) test -count=1 -run '^TestSimLong$$' -timeout 60m -v ./offloader/sim/ -args -sim.interleavings=$(BENCH_SIM_INTERLEAVINGS)

bench: bench-sim
