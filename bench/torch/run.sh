#!/usr/bin/env bash
# run.sh BUILD_DIR [step_bench.py args...]: the gj.torch step benchmark at 2 and 4 ranks (one
# torch thread per rank, for every mode alike), the package imported from BUILD_DIR. Prints one
# table per rank count. About 3.5 minutes on a quiet 2-core VM (30 rounds); the load skews wall
# times, so note it.
set -euo pipefail
build=${1:?usage: run.sh BUILD_DIR [args...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONPATH="$build/collectives/python" OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
for np in 2 4; do
  mpiexec --allow-run-as-root --oversubscribe -np "$np" /usr/bin/python3 "$here/step_bench.py" \
    --port $((29531 + np)) "$@"
done
