# Container images of tierkeeper, for those with Docker (or BuildKit):
#   make docker-image
# or, by hand (the build arguments stamp --version and the labels):
#   docker build --target offloader -t ghcr.io/tierkeeper/offloader:dev \
#     --build-arg VCS_REVISION=$(git rev-parse HEAD) --build-arg VERSION=$(git describe --tags --always --dirty) .
# `make image` builds the same images without a Docker daemon
# (internal/ociimage: one layer of static binaries on scratch). The two must
# agree (internal/ociimage's tests check the stages, binaries, entrypoints
# and user against ociimage.Images).

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VCS_REVISION=unknown
ARG VCS_TIME=
ARG VCS_MODIFIED=false
ARG VERSION=dev
RUN STAMP=github.com/tierkeeper/tierkeeper/internal/cli && \
    CGO_ENABLED=0 go build -trimpath -o /out/ \
      -ldflags "-s -w -X $STAMP.stampedRevision=${VCS_REVISION} -X $STAMP.stampedTime=${VCS_TIME} -X $STAMP.stampedModified=${VCS_MODIFIED} -X $STAMP.stampedVersion=${VERSION}" \
      ./cmd/... && \
    mkdir -p /rootfs/tmp && chmod 1777 /rootfs/tmp

# The offload service (and the offloader CLI).
FROM scratch AS offloader
ARG VCS_REVISION=unknown
ARG VCS_TIME=
ARG VERSION=dev
COPY --from=build /rootfs/ /
COPY --from=build /out/offloader /usr/local/bin/offloader
ENV PATH=/usr/local/bin TMPDIR=/tmp
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/offloader"]
LABEL org.opencontainers.image.title="tierkeeper offloader" \
      org.opencontainers.image.source="https://github.com/tierkeeper/tierkeeper" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${VCS_REVISION}" \
      org.opencontainers.image.created="${VCS_TIME}"

# The bookie agent, with diskbench.
FROM scratch AS bookieagent
ARG VCS_REVISION=unknown
ARG VCS_TIME=
ARG VERSION=dev
COPY --from=build /rootfs/ /
COPY --from=build /out/bookieagent /usr/local/bin/bookieagent
COPY --from=build /out/diskbench /usr/local/bin/diskbench
ENV PATH=/usr/local/bin TMPDIR=/tmp
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/bookieagent"]
LABEL org.opencontainers.image.title="tierkeeper bookie agent" \
      org.opencontainers.image.source="https://github.com/tierkeeper/tierkeeper" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${VCS_REVISION}" \
      org.opencontainers.image.created="${VCS_TIME}"
