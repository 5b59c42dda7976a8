# Blob stores (offloader/blob/...): the real S3 server the tests talk to.
VERSITYGW_VERSION := v1.8.0
DEPS += dep-versitygw

.PHONY: dep-versitygw
dep-versitygw $(CACHE)/bin/versitygw:
	@$(DEP) versitygw .cache/bin/versitygw "test -x $(CACHE)/bin/versitygw" \
	  "GOBIN=$(CACHE)/bin $(GO) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)"

.PHONY: test-blob
## test-blob: the blob providers' acceptance, fault-injection and COS-fake suites.
test-blob: $(CACHE)/bin/versitygw
	TIERKEEPER_REQUIRE_PEERS=1 $(GO) test -count=1 ./offloader/blob/... ./test/cosfake/...
	TIERKEEPER_REQUIRE_PEERS=1 $(GO) test -count=1 -run 'S3|BucketName' ./test/testenv/

.PHONY: bench-blob
## bench-blob: upload throughput of the fs, s3 (versitygw) and cos (cosfake) providers on 127.0.0.1.
bench-blob: $(CACHE)/bin/versitygw
	$(GO) test -run '^$$' -bench . -benchtime 3x ./offloader/blob/s3 ./offloader/blob/cos ./offloader/blob/fs

.PHONY: bench-blob-cpu
## bench-blob-cpu: MB/s and client CPU-s/GiB of 1 GiB of multipart upload per part checksum and payload signing (s3: md5|crc32c × signed|unsigned on versitygw; cos: md5|crc64 on cosfake in a child process), one pass of each hash, and AES-128-GCM sealing of 16 KiB TLS records with and without TLS 1.3's plaintext copy.
bench-blob-cpu: $(CACHE)/bin/versitygw
	cat /proc/loadavg
	$(GO) test -run '^$$' -bench 'UploadCPU|PartHash|TLSRecordSeal' -benchtime 4x ./offloader/blob ./offloader/blob/s3 ./offloader/blob/cos
	cat /proc/loadavg
bench: bench-blob bench-blob-cpu
