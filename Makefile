# SPDX-License-Identifier: Apache-2.0
# Makefile - a wrapper for people who do not speak CMake.
#
#   make run     install missing build dependencies, build, run topox on the built-in example
#   make test    the same setup, then every test (unit, integration, layering, format) with ctest
#   make test-tsan  the integration and stress tests against a ThreadSanitizer build
#   make image   build the container image and run `topox version` inside it
#   make bench   build the release preset and run the benchmarks in bench/
#   make bench-scheduler  upstream scheduler_perf with GPU gangs, with and without topox (minutes)
#   make fuzz    build the libFuzzer targets with clang and run each for FUZZ_SECONDS
#   make format  clang-format every C file in place
#   make e2e     build the real control plane from Go modules (e2e/), run the scenarios against it
#   make helm    build helm from Go modules (e2e/helm/go.mod) for the chart's test and make e2e
#   make e2e-up CLUSTER=SPEC / make e2e-down   the same cluster, left running for you (README)
#
# PRESET selects the CMake preset for run/test (dev: ASan+UBSan, -Werror; release; tsan).
PRESET ?= dev
BUILD_DIR = build/$(PRESET)
TOPOX = $(BUILD_DIR)/cli/topox
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 60

# Debian packages needed to build and test (bookworm names).
DEB_PACKAGES = build-essential cmake pkg-config git libmicrohttpd-dev libjansson-dev \
	libcurl4-openssl-dev libhwloc-dev libyaml-dev libcriterion-dev libgnutls28-dev clang-format \
	python3 python3-yaml

.PHONY: all deps configure build run test test-tsan image bench bench-scheduler fuzz format clean helm \
	e2e e2e-deps e2e-build e2e-up e2e-down

all: build

deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" -ne 0 ]; then \
	  echo "missing build dependencies; install them with:"; \
	  echo "  sudo apt-get install -y$$missing"; exit 1; \
	fi; \
	echo "installing:$$missing"; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get install -y -q $$missing >/dev/null 2>&1 || \
	  { apt-get update -q >/dev/null && apt-get install -y -q $$missing; }
	@# kubectl is not in Debian's archive; where the Kubernetes apt repository is configured, take it
	@# from there for the deploy-manifest test (t_ext_manifests), else say why that test will fail.
	@command -v kubectl >/dev/null 2>&1 || \
	  { [ "$$(id -u)" -eq 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -q kubectl >/dev/null 2>&1; } || \
	  echo "note: kubectl is not installed; t_ext_manifests (the deploy-manifest test) needs it"

$(BUILD_DIR)/CMakeCache.txt:
	cmake --preset $(PRESET)

configure: deps $(BUILD_DIR)/CMakeCache.txt

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

EXAMPLE_JOB = manifests/examples/vllm-lws-tp8-pp2.yaml

# The main job on the built-in example: plan the example vLLM job (TP 8 x PP 2, 4 replicas) on the
# example cluster, then start the extender and drive the same job through it as kube-scheduler would.
run: build
	@echo "== topox plan -f $(EXAMPLE_JOB) --cluster example"
	@$(TOPOX) plan -f $(EXAMPLE_JOB) --cluster example
	@echo
	@echo "== topox serve, driven by topox-drive (filter -> prioritize -> bind per pod over HTTP)"
	@$(BUILD_DIR)/tools/topox-drive --topox $(TOPOX) -f $(EXAMPLE_JOB) --cluster example

test: build helm
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

# helm, for the chart's test (t_ext_helm) and make e2e, built from the Go modules e2e/helm/go.mod
# pins (the shared cache makes a rebuild a relink). Needs go, as make e2e does.
helm:
	@command -v go >/dev/null 2>&1 || { echo "make helm needs go (Go 1.26); t_ext_helm will say helm is missing"; exit 0; }; \
	  E2E_GO_JOBS=1 e2e/build.sh helm

# ThreadSanitizer: an instrumented topox under the integration tests and tests/tsan; the Criterion
# unit tests are skipped because Criterion aborts under TSan (Snaipe/Criterion#274).
test-tsan: deps
	cmake --preset tsan
	cmake --build build/tsan -j $(JOBS)
	ctest --preset tsan -j $(JOBS)

# The real control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl,
# the LeaderWorkerSet controller) built from the Go modules e2e/go.mod pins, into build/e2e/bin.
E2E_DEB_PACKAGES = openssl jq curl
CLUSTER ?= racks=4,nodes-per-rack=3,gpus-per-node=8

e2e-deps:
	@missing=""; for p in $(E2E_DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  [ "$$(id -u)" -eq 0 ] || { echo "e2e needs:$$missing (sudo apt-get install -y$$missing)"; exit 1; }; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing >/dev/null; \
	fi

e2e-build: e2e-deps
	e2e/build.sh

e2e-up: build e2e-build
	e2e/up.sh '$(CLUSTER)'

e2e-down:
	e2e/down.sh

e2e: build e2e-build
	CLUSTER='$(CLUSTER)' e2e/run.sh

# The image is built without .git, so the commit travels in .git-commit (ignored by git).
image:
	@git rev-parse --short=12 HEAD > .git-commit 2>/dev/null || echo unknown > .git-commit
	@if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then \
	  docker build -t topox:dev . && docker run --rm topox:dev version && \
	  docker run --rm --entrypoint id topox:dev -u; \
	else \
	  ../shared/tools/build-image --tag topox:dev --run 'topox version' . && \
	  ../shared/tools/build-image --tag topox:dev --run 'id -u' . ; \
	fi

# The Go peer of bench_serve (bench/go-baseline: kube-scheduler's own wire types) builds offline
# from the module cache `make e2e-build` fills (E2E_CACHE) with go >= 1.26; without go or the
# cache that comparison is skipped and the rest runs.
bench:
	$(MAKE) PRESET=release build
	@command -v go >/dev/null 2>&1 || [ "$$(id -u)" -ne 0 ] || \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q golang-go >/dev/null 2>&1 || \
	  echo "bench: golang-go is not installable; the Go baseline will be skipped"
	build/release/bench/bench_plan
	build/release/bench/bench_serve --go-baseline bench/go-baseline
	build/release/bench/bench_memory

# Upstream's scheduler benchmark (scheduler_perf) with GPU gangs, kube-scheduler alone and with
# topox: bench/scheduler/README.md. Minutes per case, so never part of make test or CI.
bench-scheduler:
	$(MAKE) PRESET=release build
	bench/scheduler/run.sh

# libFuzzer targets (clang, installed here when missing and root): one per decoder, each run for
# FUZZ_SECONDS with its dictionary (fuzz/dict), its seeds (fuzz/seeds/TARGET), the crashes kept
# in tests/fuzz/corpus/TARGET and, for some, the fixtures. New inputs go to
# build/fuzz/corpus-TARGET, crash files to build/fuzz/crash-TARGET-*. FUZZ_TARGETS picks a subset;
# the runs are niced so that shared cores stay usable. fuzz/lsan.supp hides libhwloc's own leaks.
FUZZ_TARGETS ?= manifest yaml request kubeconfig inventory watch labels hwloc cmdline envexpand
FUZZ_NICE ?= nice -n 19

fuzz:
	@command -v clang >/dev/null 2>&1 || \
	  { [ "$$(id -u)" -eq 0 ] && { DEBIAN_FRONTEND=noninteractive apt-get install -y -q clang >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q clang >/dev/null; }; }; } || \
	  { echo "make fuzz needs clang: sudo apt-get install -y clang"; exit 1; }
	CC=clang cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=Debug -DTPX_FUZZ=ON -DTPX_BUILD_TESTS=OFF
	cmake --build build/fuzz -j $(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))
	@failed=""; for t in $(FUZZ_TARGETS); do \
	  case $$t in \
	    manifest|kubeconfig) dict=yaml; len=65536; extra="" ;; \
	    yaml) dict=yaml; len=65536; extra=fuzz/seeds/fuzz_manifest ;; \
	    request) dict=json; len=262144; extra=tests/fixtures/extender ;; \
	    watch) dict=json; len=262144; extra="" ;; \
	    inventory) dict=inventory; len=65536; extra="" ;; \
	    labels|cmdline) dict=$$t; len=16384; extra="" ;; \
	    envexpand) dict=envexpand; len=8192; extra="" ;; \
	    hwloc) dict=hwloc; len=1048576; extra=tests/fixtures/hwloc ;; \
	  esac; san=""; \
	  case $$t in \
	    hwloc) san="ASAN_OPTIONS=fast_unwind_on_malloc=0 LSAN_OPTIONS=suppressions=$(CURDIR)/fuzz/lsan.supp" ;; \
	  esac; \
	  mkdir -p build/fuzz/corpus-$$t; \
	  kept=tests/fuzz/corpus/fuzz_$$t; [ -d $$kept ] || kept=""; \
	  echo "== fuzz_$$t for $(FUZZ_SECONDS) s"; \
	  env $$san $(FUZZ_NICE) build/fuzz/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -max_len=$$len \
	    -dict=fuzz/dict/$$dict.dict -artifact_prefix=build/fuzz/crash-$$t- -print_final_stats=1 \
	    build/fuzz/corpus-$$t fuzz/seeds/fuzz_$$t $$kept $$extra || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: crashes in:$$failed (see build/fuzz/crash-*)"; exit 1; fi

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build
