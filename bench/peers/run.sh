#!/usr/bin/env bash
# The comparison tables of docs/benchmarks.md ("Against Horovod, DDP and MultiWorkerMirroredStrategy"),
# ranks on this host. Usage: bench/peers/run.sh BUILD_DIR [table...]
#   tables: allreduce-mpi allreduce-gloo grouped-mpi grouped-gloo collectives-mpi collectives-gloo
#           synthetic-mpi synthetic-gloo tf tf-horovod   (default: all; GJ_BENCH_NP ranks, default 2)
# Horovod comes from bench/horovod/build.sh's environment (built on first use, then cached); the TF
# table from scripts/pypi/make-venv.sh tf, and tf-horovod (the same table with horovod.tensorflow)
# from bench/horovod/build.sh tensorflow's. One torch thread per rank. Each program's own options
# go in GJ_BENCH_ARGS (e.g. GJ_BENCH_ARGS="--rounds 3" for a quick look).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(realpath -e "${1:?usage: run.sh BUILD_DIR [table...]}")
shift
tables=("$@")
[ ${#tables[@]} -gt 0 ] || tables=(allreduce-mpi allreduce-gloo grouped-mpi grouped-gloo collectives-mpi
                                   collectives-gloo synthetic-mpi synthetic-gloo tf tf-horovod)
np=${GJ_BENCH_NP:-2}
read -ra extra <<<"${GJ_BENCH_ARGS:-}"
export PYTHONPATH="$build/collectives/python:$here:$root/bench/torch" OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
mpi=(mpiexec --allow-run-as-root --oversubscribe --bind-to none -np "$np")
echo "# $(date -u '+%Y-%m-%d %H:%M UTC') cpus=$(getconf _NPROCESSORS_ONLN) cpu=\"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')\" loadavg=\"$(cut -d' ' -f1-3 /proc/loadavg)\" $(mpiexec --version | head -1)"
hvd_python=
for t in "${tables[@]}"; do
  case "$t" in
    tf|tf-horovod) ;;
    allreduce-*|grouped-*|collectives-*|synthetic-*) [ -n "$hvd_python" ] || hvd_python=$("$root/bench/horovod/build.sh")/bin/python ;;
    *) echo "run.sh: unknown table '$t'; see the usage line in $0" >&2; exit 2 ;;
  esac
  case "$t" in
    tf) "${mpi[@]}" "$("$root/scripts/pypi/make-venv.sh" tf)/bin/python" "$here/tf_synthetic.py" "${extra[@]}" ;;
    tf-horovod) "${mpi[@]}" "$("$root/bench/horovod/build.sh" tensorflow)/bin/python" "$here/tf_synthetic.py" \
                  --horovod mpi "${extra[@]}" ;;
    *) "${mpi[@]}" "$hvd_python" "$here/${t%-*}.py" --horovod "${t##*-}" "${extra[@]}" ;;
  esac
done
echo "# done, loadavg=\"$(cut -d' ' -f1-3 /proc/loadavg)\""
