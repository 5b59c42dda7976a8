# Offload object format (offloader/format, offloader/format/upload).
.PHONY: test-format bench-format bench-format-read

## test-format: the format codec, reader and upload pipeline unit tests (fast, in-memory store).
test-format:
	$(GO) test -count=1 ./offloader/format/...

# Benchmark knobs: ledger sizes in MiB (the first is also the throughput
# size), block size, parts in flight, entry size, paired rounds.
BENCH_FORMAT_SIZES  ?= 1024,2048
BENCH_FORMAT_BLOCK  ?= 64
BENCH_FORMAT_PARTS  ?= 2
BENCH_FORMAT_ENTRY  ?= 64
BENCH_FORMAT_ROUNDS ?= 3

## bench-format: encode+multipart upload vs raw multipart on versitygw, and peak RSS at two ledger sizes.
bench-format: $(CACHE)/bin/versitygw
	TIERKEEPER_REQUIRE_PEERS=1 TK_BENCH_SIZES=$(BENCH_FORMAT_SIZES) TK_BENCH_BLOCK_MIB=$(BENCH_FORMAT_BLOCK) \
	  TK_BENCH_PARTS=$(BENCH_FORMAT_PARTS) TK_BENCH_ENTRY_KIB=$(BENCH_FORMAT_ENTRY) TK_BENCH_ROUNDS=$(BENCH_FORMAT_ROUNDS) \
	  $(GO) test -count=1 -run '^$$' -bench BenchmarkFormatUpload -benchtime 1x -timeout 60m ./offloader/format/upload/

bench: bench-format

# Reader fetch knobs: ledger payload MiB, largest entry KiB (sizes uniform in
# 1..this), random single-entry reads, entries per sequential Read.
BENCH_READ_SIZE   ?= 256
BENCH_READ_ENTRY  ?= 128
BENCH_READ_RANDOM ?= 1000
BENCH_READ_BATCH  ?= 100

## bench-format-read: bytes the format reader fetches (on the wire, via a counting proxy) for random and sequential reads on versitygw.
bench-format-read: $(CACHE)/bin/versitygw
	TIERKEEPER_REQUIRE_PEERS=1 TK_BENCH_READ_MIB=$(BENCH_READ_SIZE) TK_BENCH_BLOCK_MIB=$(BENCH_FORMAT_BLOCK) \
	  TK_BENCH_ENTRY_KIB=$(BENCH_READ_ENTRY) TK_BENCH_RANDOM=$(BENCH_READ_RANDOM) TK_BENCH_BATCH=$(BENCH_READ_BATCH) \
	  $(GO) test -count=1 -run '^$$' -bench BenchmarkReaderFetch -benchtime 1x -timeout 30m ./offloader/format/

bench: bench-format-read
