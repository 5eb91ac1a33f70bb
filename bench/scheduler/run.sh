#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/scheduler/run.sh - make bench-scheduler: upstream's scheduler benchmark (scheduler_perf,
# k8s.io/kubernetes v1.37.2) with GPU gangs, each scheduler configuration side by side in one run,
# then a table (report/) and benchstat. Minutes per case: not part of make test or CI.
#
# Settings (environment):
#   BENCH_CONFIGS    regexp of configurations (default: the eight 8-GPU ones, performance-config.yaml)
#   BENCH_WORKLOADS  regexp of workloads (default 2000Nodes_Gang4)
#   BENCH_LABELS     scheduler_perf's label filter (default performance; quick, n500, n2000, n5000, gb200)
#   BENCH_COUNT      rounds: every configuration once per round, so runs are interleaved (default 3)
#   BENCH_OUT        where the logs, data items and tables go (default build/bench-scheduler/DATE)
#   TOPOX_SERVE_ARGS extra flags for topox serve; TOPOX_LOG_LEVEL its log level (default warn)
#   BENCH_B_ARGS     an A/B: after each round, BENCH_B_CONFIGS (default Topox|TopoxGang) run again
#                    in a process of their own with these serve flags added (for example
#                    "--one-held-node false"); their table is table-b.md, their logs under b/
# etcd comes from make e2e's build (build/e2e/bin), the Go modules and build cache from its cache
# (E2E_CACHE, default /var/cache/topox-e2e).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/bench/scheduler
CACHE=${E2E_CACHE:-/var/cache/topox-e2e}
export GOMODCACHE=$CACHE/mod GOCACHE=$CACHE/build CGO_ENABLED=0
export GOFLAGS="-p=${E2E_GO_JOBS:-2} -buildvcs=false -mod=readonly"
configs=${BENCH_CONFIGS:-Default|DefaultPct100|Gang|TAS|Topox|TopoxGang|TASTopox|TopoxAdaptive}
workloads=${BENCH_WORKLOADS:-2000Nodes_Gang4}
labels=${BENCH_LABELS:-performance}
count=${BENCH_COUNT:-3}
out=${BENCH_OUT:-$root/build/bench-scheduler/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
out=$(cd "$out" && pwd)

command -v go >/dev/null || { echo "bench-scheduler: go is not installed (Go 1.26 builds scheduler_perf)" >&2; exit 1; }
[ -x "$root/build/e2e/bin/etcd" ] || "$root/e2e/build.sh"
[ -x "$root/build/release/cli/topox" ] || { echo "bench-scheduler: build topox first (make build PRESET=release)" >&2; exit 1; }
echo "bench-scheduler: building the scheduler_perf test binary (k8s.io/kubernetes $(cd "$here" && go list -m -f '{{.Version}}' k8s.io/kubernetes))"
( cd "$here" && go test -c -o "$out/scheduler.test" . )
( cd "$here/benchstat" && go build -o "$out/benchstat" golang.org/x/perf/cmd/benchstat )
( cd "$here" && go build -o "$out/report" ./report )

export PATH=$root/build/e2e/bin:$PATH TOPOX_BIN=$root/build/release/cli/topox
export TOPOX_BENCH_OUT=$out/placement.jsonl TOPOX_BENCH_LOGS=$out
echo "bench-scheduler: ($configs) x ($workloads), $count runs each, labels $labels -> $out"
# The test binary reads performance-config.yaml, configs/ and templates/ from its directory.
# One process per round: -test.count would run each case count times in a row, not interleaved.
# side CONFIGS LOG: one process, every configuration once (scheduler.test appends to LOG)
side() {
    ( cd "$here" && "$out/scheduler.test" -test.run='^$' -test.bench="^BenchmarkPerfScheduling\$/^($1)\$/^($workloads)\$" \
        -test.benchtime=1x -test.count=1 -test.timeout=0 -perf-scheduling-label-filter="$labels" \
        -data-items-dir="$out" >>"$2" 2>&1 )
}
: >"$out/bench.log"
[ -z "${BENCH_B_ARGS:-}" ] || { mkdir -p "$out/b"; : >"$out/bench-b.log"; }
for round in $(seq 1 "$count"); do
    echo "bench-scheduler: round $round of $count"
    side "$configs" "$out/bench.log" || rc=$?
    [ -z "${BENCH_B_ARGS:-}" ] ||
        TOPOX_SERVE_ARGS="${TOPOX_SERVE_ARGS:-} $BENCH_B_ARGS" TOPOX_BENCH_OUT=$out/placement-b.jsonl \
            TOPOX_BENCH_LOGS=$out/b side "${BENCH_B_CONFIGS:-Topox|TopoxGang}" "$out/bench-b.log" || rc=$?
done
grep -E '^(Benchmark|TOPOX-PLACEMENT|--- FAIL)' "$out/bench.log" | cut -c1-200 || true
"$out/report" "$out/bench.log" "$out/placement.jsonl" | tee "$out/table.md"
[ -z "${BENCH_B_ARGS:-}" ] || { echo "B side ($BENCH_B_ARGS):"; "$out/report" "$out/bench-b.log" "$out/placement-b.jsonl" | tee "$out/table-b.md"; }
# benchstat: one column per configuration (sub-benchmark names as key=value, which it reads)
grep -E '^(goos|goarch|pkg|cpu|Benchmark)' "$out/bench.log" |
    sed -E 's#^BenchmarkPerfScheduling/([^/[:space:]]+)/([^[:space:]]+)-([0-9]+)#BenchmarkPerfScheduling/workload=\2/config=\1-\3#' >"$out/bench.txt" || true
"$out/benchstat" -row /workload -col /config \
    -filter '.unit:(SchedulingThroughput/Average OR scheduler_scheduling_attempt_duration_ms/Perc50 OR scheduler_scheduling_attempt_duration_ms/Perc99)' \
    "$out/bench.txt" >"$out/benchstat.txt" 2>&1 || true
echo "bench-scheduler: table $out/table.md, benchstat $out/benchstat.txt, full log $out/bench.log"
exit "${rc:-0}"
