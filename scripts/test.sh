#!/usr/bin/env bash
# The whole test suite: install dependencies, configure, build, run every test with ctest.
# This is the README's test command and what .ci/run runs.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
build=${GJ_BUILD_DIR:-build}
# Where CUDA is installed (our machines: /usr/local/cuda), require it, so a broken detection
# fails the run instead of quietly building without the GPU backend.
cuda=()
if [ -x /usr/local/cuda/bin/nvcc ]; then cuda=(-DGJ_WITH_CUDA=ON -DGJ_WITH_NCCL=ON); fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "${cuda[@]}"
cmake --build "$build" -j"$(nproc)"
# Every test carries one area and one kind label (README, "Tests"): a test added without them fails here.
cmake -DBUILD="$build" -P cmake/GjCheckTestLabels.cmake
# gj.tensorflow's tests need the TensorFlow environment: scripts/test-tf.sh (CI's next stage).
# Tests in parallel, twice the cores (GJ_TEST_JOBS): most of a test's time is spent waiting on
# ranks, sockets and timeouts. Tests that need two cores say so (PROCESSORS 2), the multi-host
# scenarios run one at a time (RESOURCE_LOCK), timing comparisons alone (RUN_SERIAL).
jobs=${GJ_TEST_JOBS:-$(( $(nproc) * 2 ))}
ctest --test-dir "$build" --output-on-failure --timeout 600 -j"$jobs" -LE '^tensorflow$'
