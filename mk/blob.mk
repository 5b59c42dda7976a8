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
bench: bench-blob
