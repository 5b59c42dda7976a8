# bookieagent: bookie tuning recommendations, capacity reports, DaemonSet server.
#
# Debian's prometheus package: promtool checks the agent's /metrics output
# and configs/bookieagent-alerts.yaml in the tests, and its prometheus server
# (testenv.StartPrometheus: 127.0.0.1, a free port, its own config and TSDB)
# runs the offloader's pressure query in offloader/pressure's tests.
# Installing the package does not start a Prometheus server where
# invoke-rc.d/systemd refuse to start services (containers, CI); where they
# do start it, it listens on :9090 only and the tests do not use that port.
APT_PACKAGES += prometheus

.PHONY: bookieagent-check-configs bench-bookieagent

## bookieagent-check-configs: promtool checks of the alert rules and their unit tests.
bookieagent-check-configs:
	cd configs && promtool check rules bookieagent-alerts.yaml && promtool test rules bookieagent-alerts.test.yaml

## bench-bookieagent: a real `bookieagent recommend` run on .cache/bench-bookieagent (default budget: ≤ 2 min, ≤ 512 GiB).
bench-bookieagent:
	@mkdir -p $(CACHE)/bench-bookieagent/journal $(CACHE)/bench-bookieagent/ledgers
	$(GO) build -o $(BIN)/bookieagent ./cmd/bookieagent
	time $(BIN)/bookieagent recommend --journal-dir $(CACHE)/bench-bookieagent/journal \
	  --ledger-dir $(CACHE)/bench-bookieagent/ledgers --max-direct-memory 4g

bench: bench-bookieagent

.PHONY: bench-bookieagent-repeat
## bench-bookieagent-repeat: the repeatability goals — 3 default-budget recommendations on one disk (identical counts and
## writeBufferSizeBytes, the rest within ±15%) and the agent's sustained throughput vs ≥ 20 s fio runs (±15%); ~12 min.
## Run it on a quiet machine: it prints the load average. Each run's measurements are saved in
## .cache/bench-bookieagent-repeat/runs/<UTC stamp>/run-N.json; BA_REPEAT_FROM=<that dir> re-evaluates
## Recommend on them (no measurement): make bench-bookieagent-repeat BA_REPEAT_FROM=…
bench-bookieagent-repeat:
	@mkdir -p $(CACHE)/bench-bookieagent-repeat
	BA_REPEAT_DIR=$(CACHE)/bench-bookieagent-repeat BA_REPEAT_FROM=$(BA_REPEAT_FROM) $(GO) test -run '^$$' -bench BenchmarkRecommendRepeat -benchtime 1x -timeout 60m ./bookieagent/
