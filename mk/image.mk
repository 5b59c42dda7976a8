# Container images without a container daemon (internal/ociimage): static
# binaries (CGO_ENABLED=0) stamped like make build, one layer on scratch,
# written as bin/image-<name>.tar for `docker load -i` / `ctr image import`.
# The Dockerfile builds the same images with Docker (make docker-image).
IMAGE_REGISTRY ?= ghcr.io/tierkeeper
IMAGE_TAG      ?= $(VERSION)
IMAGE_BIN      := $(BIN)/image
IMAGE_ARCH     ?= $(shell $(GO) env GOARCH)

.PHONY: image docker-image

## image: bin/image-offloader.tar and bin/image-bookieagent.tar (scratch, static binaries, user 65532), no Docker needed.
image:
	@mkdir -p $(IMAGE_BIN)
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(IMAGE_BIN)/ ./cmd/...
	$(GO) run ./internal/ociimage/mkimage --bin-dir $(IMAGE_BIN) --out $(BIN) --registry $(IMAGE_REGISTRY) \
	  --tag $(IMAGE_TAG) --version $(VERSION) --revision $(VCS_REVISION) --created $(VCS_TIME) --arch $(IMAGE_ARCH)

## docker-image: the same images with Docker, from the Dockerfile (needs a Docker daemon).
docker-image:
	for t in offloader bookieagent; do \
	  docker build --target $$t -t $(IMAGE_REGISTRY)/$$t:$(IMAGE_TAG) \
	    --build-arg VCS_REVISION=$(VCS_REVISION) --build-arg VCS_TIME=$(VCS_TIME) \
	    --build-arg VCS_MODIFIED=$(VCS_MODIFIED) --build-arg VERSION=$(VERSION) . || exit 1; \
	done
