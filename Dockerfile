# SPDX-License-Identifier: Apache-2.0
# Dockerfile - multi-stage: build topox on Debian bookworm, run it on bookworm-slim as uid 65532.
# Build: `make image` (plain `docker build .` works too).

FROM debian:bookworm AS build
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      build-essential cmake pkg-config git ca-certificates \
      libmicrohttpd-dev libgnutls28-dev libjansson-dev libcurl4-openssl-dev libhwloc-dev libyaml-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# TPX_HARDEN (the default for RelWithDebInfo, spelled out here): stack protector, _FORTIFY_SOURCE=3,
# PIE, full RELRO. check-hardening.sh fails the build when the stripped binary lacks any of it.
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTPX_WERROR=OFF -DTPX_BUILD_TESTS=OFF \
      -DTPX_HARDEN=ON \
 && cmake --build /build -j "$(nproc)" --target topox \
 && strip /build/cli/topox \
 && scripts/check-hardening.sh /build/cli/topox \
 && /build/cli/topox version \
 && /build/cli/kubectl-topox --help | grep -q '^usage: kubectl topox'

FROM debian:bookworm-slim
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="topox" \
      org.opencontainers.image.description="Topology-aware placement of large-model workloads on Kubernetes: scheduler extender, node labeler, planner" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/topox/topox" \
      org.opencontainers.image.base.name="debian:bookworm-slim"
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      libmicrohttpd12 libjansson4 libcurl4 libhwloc15 libyaml-0-2 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/cli/topox /usr/local/bin/topox
# `kubectl topox` inside the image: the same binary under the plugin's name (cli/main.c)
RUN ln -s topox /usr/local/bin/kubectl-topox
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/topox"]
CMD ["--help"]
