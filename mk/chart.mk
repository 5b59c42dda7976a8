# Helm chart (charts/tierkeeper) and the manifests in configs/ rendered
# from it. helm is installed as a Go tool into .cache/bin, stamped with its
# version and a current Kubernetes version (as helm's own build does).
# The tests (charts/chart_test.go) run helm lint/template: seconds.
HELM_VERSION := v3.22.0
HELM         := $(CACHE)/bin/helm
HELM_LDFLAGS := -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) \
                -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=37 \
                -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=37

DEPS      += dep-helm
TEST_DEPS += dep-helm

.PHONY: dep-helm configs test-chart
dep-helm $(HELM):
	@$(DEP) helm .cache/bin/helm "$(HELM) version --short | grep -q '^$(HELM_VERSION)'" \
	  "GOBIN=$(CACHE)/bin $(GO) install -ldflags '$(HELM_LDFLAGS)' helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)"

## configs: re-render configs/offloader-deployment.yaml, bookieagent-daemonset.yaml and bookieagent-sidecar-patch.yaml from the chart.
configs: dep-helm
	$(GO) test -count=1 -run '^TestConfigsUpToDate$$' ./charts/ -update

## test-chart: helm lint, helm template of every value set decoded strictly into the Kubernetes API types, bad values, configs/ up to date.
test-chart: dep-helm
	TIERKEEPER_REQUIRE_PEERS=1 $(GO) test -count=1 ./charts/
