#!/usr/bin/env bash
# Runs the host benchmarks exactly as docs/benchmarks.md reports them (2 and 4 ranks on this
# node). Usage: bench/run_host.sh [build-dir]   (build with -DGJ_BUILD_BENCH=ON, the default)
# Takes a few minutes; run it on a quiet machine (the load average is printed with the tables).
set -euo pipefail
build=${1:-build}
mpi=(mpiexec --allow-run-as-root --oversubscribe)
echo "# $(date -u '+%Y-%m-%d %H:%M UTC') nproc=$(nproc) cpu=\"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')\" loadavg=\"$(cut -d' ' -f1-3 /proc/loadavg)\" $(mpiexec --version | head -1)"
# Each program at 2 and 4 ranks: run <program> <options...>
run() {
  for np in 2 4; do
    "${mpi[@]}" -np "$np" "$build/bench/$1" "${@:2}"
  done
}
run gj_allreduce_bench --types f32,bf16
run gj_fusion_bench --type f32
run gj_collectives_bench --types f32,bf16
run gj_nonblocking_bench --type f32
echo "# done, loadavg=\"$(cut -d' ' -f1-3 /proc/loadavg)\""
