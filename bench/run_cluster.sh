#!/usr/bin/env bash
# Host collectives across pods, as docs/benchmarks.md ("Host collectives across pods") reports
# them: gj_allreduce_bench (gjAllReduce vs MPI_Allreduce, 4 B - 64 MiB) at 3 pods x 2 ranks and
# 2 pods x 1 rank, and gj_fusion_bench (ResNet-50's 161 gradients: gjGroupedAllReduce vs one
# MPI_Allreduce per tensor) at 3 pods x 2 ranks, on the namespaced cluster of tests/multihost
# (each pod a network namespace with real sshd, mpiexec over the veth links; every pod's
# command is gj-mpirun). The ranks run unbound (--bind-to none): mpiexec would bind the ranks of
# pods sharing this one machine to the same cores (docs/benchmarks.md, "CPU binding across
# pods"), and the numbers would measure that.
# Usage (root): bench/run_cluster.sh [build-dir] [allreduce-bench options...]
#   GJ_BENCH_JOBS="allreduce-3x2 allreduce-2x1 fusion-3x2" (the default: all) selects the jobs;
#   GJ_BENCH_FUSION_ARGS (default "--type f32") the fusion benchmark's options.
#   The jobs against Horovod (bench/peers, docs/benchmarks.md "Against Horovod, DDP and
#   MultiWorkerMirroredStrategy"), 3 pods x 2 ranks, not in the default set:
#   peers-allreduce-mpi peers-allreduce-gloo peers-grouped-mpi peers-grouped-gloo
#   peers-collectives-mpi peers-collectives-gloo (Horovod from bench/horovod/build.sh; the
#   program's options in GJ_BENCH_PEERS_ARGS; HOROVOD_GLOO_TIMEOUT_SECONDS, when set, reaches the
#   ranks).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(realpath -e "${1:-build}") || { echo "run_cluster.sh: build dir '${1:-build}' not found" >&2; exit 2; }
shift $(($# > 0 ? 1 : 0))
allreduce_args=("$@")
[ ${#allreduce_args[@]} -gt 0 ] || allreduce_args=(--types f32 --minbytes 4 --maxbytes 64M --rounds 5)
source "$here/../tests/multihost/scenario.sh"
mh_scenario_init "$build/agent/gj-mpirun" "$build/bench/gj_allreduce_bench"
unbound=(--mpi-arg=--bind-to --mpi-arg=none)

# run_job <job> <workers> <cpu per pod> <program> [args]: one cluster, one job; prints the
# master's table lines. A subshell, so each cluster's cleanup trap runs when its job is done.
run_job() (
  local job=$1 workers=$2 cpu=$3
  shift 3
  mh_up "$job" "$workers"
  mh_agent_job "$cpu" 0 "$cpu" 0 "${job_env[@]}" -- "${unbound[@]}" "$@"
  mh_pod_wait "$job-master-0" 1800 || mh_die "$job: still running after 30 minutes"
  grep -E '^(#|  |\|)' "$(mh_podlog "$job-master-0")"
  [ "$MH_RC" = 0 ] || mh_die "$job: master pod exited $MH_RC"
)

echo "# $(date -u '+%Y-%m-%d %H:%M UTC') nproc=$(nproc) loadavg=\"$(cut -d' ' -f1-3 /proc/loadavg)\" $(mpiexec --version | head -1); pods: tests/multihost namespaces, --bind-to none"
read -ra fusion_args <<<"${GJ_BENCH_FUSION_ARGS:---type f32}"
read -ra peers_args <<<"${GJ_BENCH_PEERS_ARGS:-}"
job_env=()
# peers <table> <controller>: a bench/peers program against Horovod, 3 pods x 2 ranks.
peers() (
  local python
  python=$("$here/horovod/build.sh")/bin/python || mh_die "bench/horovod/build.sh failed"
  job_env=(GJ_PYTHON="$python" OMP_NUM_THREADS=1
           PYTHONPATH="$build/collectives/python:$here/peers:$here/torch")
  # Horovod's Gloo gives up on a send or receive after 30 s by default; across these pods its
  # transfers have stalled that long (docs/benchmarks.md): a longer limit, when set, reaches it.
  [ -n "${HOROVOD_GLOO_TIMEOUT_SECONDS:-}" ] && job_env+=(HOROVOD_GLOO_TIMEOUT_SECONDS="$HOROVOD_GLOO_TIMEOUT_SECONDS")
  echo "# $1 against Horovod ($2 controller), 3 pods x 2 ranks"
  run_job "p$1" 2 2 "$here/peers/$1.py" --horovod "$2" "${peers_args[@]}"
)
failed=()  # each job runs in a subshell: its mh_die ends that job, this loop records it
for j in ${GJ_BENCH_JOBS:-allreduce-3x2 allreduce-2x1 fusion-3x2}; do
  rc=0
  case "$j" in
    allreduce-3x2) echo "# 3 pods x 2 ranks"; run_job b3x2 2 2 "$build/bench/gj_allreduce_bench" "${allreduce_args[@]}" || rc=$? ;;
    allreduce-2x1) echo "# 2 pods x 1 rank"; run_job b2x1 1 1 "$build/bench/gj_allreduce_bench" "${allreduce_args[@]}" || rc=$? ;;
    fusion-3x2) echo "# ResNet-50 gradients, 3 pods x 2 ranks"; run_job f3x2 2 2 "$build/bench/gj_fusion_bench" "${fusion_args[@]}" || rc=$? ;;
    peers-allreduce-*|peers-grouped-*|peers-collectives-*) t=${j#peers-}; peers "${t%-*}" "${t##*-}" || rc=$? ;;
    *) echo "run_cluster.sh: GJ_BENCH_JOBS names '$j'; use allreduce-3x2, allreduce-2x1, fusion-3x2, peers-{allreduce,grouped,collectives}-{mpi,gloo}" >&2; exit 2 ;;
  esac
  [ "$rc" = 0 ] || failed+=("$j (exit $rc)")
done
echo "# done, loadavg=\"$(cut -d' ' -f1-3 /proc/loadavg)\""
if [ ${#failed[@]} -gt 0 ]; then
  echo "run_cluster.sh: failed: ${failed[*]}" >&2
  exit 1
fi
