#!/usr/bin/env bash
# The whole test suite: install dependencies, configure, build, run every test with ctest.
# This is the README's test command and what .ci/run runs.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
build=${GJ_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j"$(nproc)"
ctest --test-dir "$build" --output-on-failure --timeout 600
