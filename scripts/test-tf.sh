#!/usr/bin/env bash
# The TensorFlow stage (.ci/run, after `test`): the TensorFlow environment
# (scripts/install-deps.sh --tf: /opt/gj-venvs/tf from scripts/pypi/pins.txt), a build (the one
# in build/ reused: stage `test` made it), and gj.tensorflow's tests (ctest -L tensorflow, the
# environment found at configure time: tests/tensorflow/CMakeLists.txt).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh --tf
build=${GJ_BUILD_DIR:-build}
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release
else
  cmake -S . -B "$build"  # finds the environment made above
fi
cmake --build "$build" -j"$(nproc)" --target gj_python
ctest --test-dir "$build" -L tensorflow --output-on-failure --timeout 600 -j"$(nproc)"
