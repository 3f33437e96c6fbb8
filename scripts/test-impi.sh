#!/usr/bin/env bash
# Intel MPI: gj-mpirun's Intel MPI launch and the library under Intel MPI's runtime (docs/testing.md,
# "Intel MPI"). A stage of .ci/run after `test` (it reuses that stage's gj-mpirun).
#   1. scripts/install-deps.sh --impi: impi-rt (scripts/pypi/pins.txt) in /opt/gj-venvs/impi
#   2. a library-only build against Debian's MPICH (${GJ_IMPI_BUILD_DIR:-build-impi}): Intel MPI keeps
#      the MPICH ABI, and <build>/impi-abi maps Debian's libmpich.so.12 to Intel's libmpi.so.12; the MPI
#      suites' mpiexec is scripts/impi/mpiexec-impi (Intel's hydra, shared memory)
#   3. ctest: the collectives' multi-rank suites on Intel MPI, and every test labelled impi (3-pod
#      jobs on the namespaced cluster, master-only jobs through gj-mpirun, the seed's torch script)
# GJ_AGENT: the gj-mpirun to test (default build/agent/gj-mpirun; built here when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --impi
impi=$(scripts/pypi/make-venv.sh impi)
build=${GJ_IMPI_BUILD_DIR:-build-impi}
agent=${GJ_AGENT:-build/agent/gj-mpirun}
jobs=$(nproc)
echo "== intel mpi: $("$impi/bin/mpiexec.hydra" --version | head -1)"

agent_args=(-DGJ_BUILD_AGENT=OFF "-DGJ_IMPI_AGENT=$(realpath "$agent")")
targets=()
if [ ! -x "$agent" ]; then
  echo "== no gj-mpirun at $agent: building it in $build"
  agent_args=(-DGJ_BUILD_AGENT=ON -DGJ_IMPI_AGENT=)
  targets+=(gj-mpirun)
fi
mkdir -p "$build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DGJ_WITH_CUDA=OFF -DGJ_WITH_NCCL=OFF -DGJ_BUILD_BENCH=OFF \
  -DMPI_C_COMPILER=mpicc.mpich -DMPI_CXX_COMPILER=mpicxx.mpich -DMPIEXEC_EXECUTABLE="$PWD/scripts/impi/mpiexec-impi" \
  -DGJ_IMPI_ROOT="$impi" "${agent_args[@]}" >"$build/configure.log" 2>&1 \
  || { tail -n 30 "$build/configure.log"; exit 1; }
targets+=(gj_coll_mpi_test gj_coll_shm_mpitest gj_python train mh_probe_impi mh_tcp_rtt_impi gj_impi_mpi_hello)
start=$SECONDS
cmake --build "$build" -j"$jobs" $(printf -- '--target %s ' "${targets[@]}")
echo "== intel mpi: build took $((SECONDS - start)) s"

# The wrapper and the suites find Intel MPI and the ABI folder here.
export GJ_IMPI_ROOT=$impi GJ_IMPI_ABI_DIR="$PWD/$build/impi-abi"
# A rank must load Intel MPI's library, not Debian's MPICH (the ABI folder missing from its path).
hello=$("$PWD/scripts/impi/mpiexec-impi" -n 2 env I_MPI_DEBUG=4 "$build/tests/impi/gj_impi_mpi_hello" 2>&1) || true
grep -q 'MPI startup(): Intel(R) MPI Library' <<<"$hello" \
  || { echo "FAIL: the MPICH-built program did not run on Intel MPI's library:"; echo "$hello"; exit 1; }
echo "== intel mpi: $(grep -m1 'MPI startup(): Intel' <<<"$hello")"
# The collectives' multi-rank suites (built against MPICH, run on Intel MPI's library).
suites='^(coll\.mpi\.np2(\.noshm)?|coll\.mpi\.np3|coll\.python\.np2|shm\.allreduce\.np[23])$'
ctest --test-dir "$build" --output-on-failure --timeout 600 -j"$(nproc)" -R "$suites|_impi\$"
