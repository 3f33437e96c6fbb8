#!/bin/bash
# Shared by the scenario scripts s*.sh: the platform's pod environment, starting pods whose
# command is gj-mpirun, and assertions. Sourced after cluster.sh.
# Scenario scripts are called by ctest as: s<N>_<name>.sh <gj-mpirun> <training program>.
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh"
set -uo pipefail

# mh_scenario_init <gj-mpirun> <program>: checks the arguments and the machine (skip or fail).
mh_scenario_init() {
  # Absolute paths: the pods start in / and the workers see the same file system.
  MH_GJ=$(realpath -e "${1:-}") && [ -x "$MH_GJ" ] \
    || mh_die "gj-mpirun '${1:-}' is not an executable file; pass the built binary"
  MH_PROG=$(realpath -e "${2:-}") || mh_die "training program '${2:-}' not found; build mh_probe first"
  MH_KEEP_PATHS="$(dirname "$MH_GJ"):$(dirname "$MH_PROG")"
  mh_require
}

# mh_platform_env <pod> <master cpu> <master gpu> <worker cpu> <worker gpu>: sets MH_ENV to
# the variables the platform writes into that pod, and GJ_PREFLIGHT=off (MH_PREFLIGHT to change
# it): the pre-flight checks cost every job start a second of ssh and measurement, which only
# s18_preflight.sh tests (it passes GJ_PREFLIGHT=on, after these, so it wins); MPI_HOST (the workers' <pod>.<job>, in
# order, no slots) only on the master, as Volcano's mpi plugin does.
mh_platform_env() {
  local pod=$1 role=worker workers=$((${#MH_PODS[@]} - 1)) hosts="" i
  case "$pod" in *-master-*) role=master ;; esac
  MH_ENV=(GJ_TRAINING_ROLE="$role" GJ_TRAINING_VC_JOB_NAME="$MH_JOB" GJ_TRAINING_POD_NAME="$pod"
    GJ_TRAINING_MASTER_CPU_LIMIT="$2" GJ_TRAINING_MASTER_GPU_LIMIT="$3" GJ_TRAINING_MASTER_REPLICAS=1
    GJ_TRAINING_WORKER_CPU_LIMIT="$4" GJ_TRAINING_WORKER_GPU_LIMIT="$5" GJ_TRAINING_WORKER_REPLICAS="$workers"
    GJ_PREFLIGHT="${MH_PREFLIGHT:-off}")
  if [ "$role" = master ] && [ "$workers" -gt 0 ]; then
    for ((i = 0; i < workers; i++)); do hosts+="${hosts:+,}$MH_JOB-worker-$i.$MH_JOB"; done
    MH_ENV+=(MPI_HOST="$hosts")
  fi
}

# mh_agent_pod <pod> <mcpu> <mgpu> <wcpu> <wgpu> [NAME=value ...] -- <gj-mpirun args...>
# Starts a pod whose command is gj-mpirun, with the platform's environment plus extras.
mh_agent_pod() {
  local pod=$1; shift
  mh_platform_env "$pod" "$1" "$2" "$3" "$4"; shift 4
  local extra=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do extra+=("$1"); shift; done
  shift
  mh_pod_start "$pod" "${MH_ENV[@]}" "${extra[@]}" -- "$MH_GJ" "$@"
}

# mh_agent_job <mcpu> <mgpu> <wcpu> <wgpu> [NAME=value ...] -- <gj-mpirun args...>
# Every pod of the job runs the same gj-mpirun command line, as the platform does.
mh_agent_job() {
  local pod
  for pod in "${MH_PODS[@]}"; do mh_agent_pod "$pod" "$@"; done
}

mh_master() { echo "${MH_PODS[0]}"; }

# For MPICH pods: MPICH's UCX transport sees one kernel (one boot id) in every "pod" and would
# try shared memory between them, which their private /dev/shm cannot give; on real nodes it
# does not. Set in every pod's environment, as a platform would.
MH_MPICH_POD_ENV=(UCX_TLS=tcp,self UCX_NET_DEVICES=eth0)

# For Intel MPI pods: an image with Intel MPI's runtime at GJ_IMPI_ROOT (its bin first in PATH, so
# gj-mpirun detects the flavour from `mpiexec --version`) and programs built against Debian's MPICH,
# whose libmpich.so.12 resolves to Intel MPI's libmpi.so.12 through GJ_IMPI_ABI_DIR (the build's
# impi-abi folder). The fabrics a shared-memory + TCP cluster names (docs/agent.md, "Intel MPI"):
# shared memory within a pod (Intel MPI groups ranks into nodes by host name, so never across
# these pods of one kernel), libfabric's tcp provider on the pod's eth0 between pods. Intel's
# defaults chose the same here; the pods set them as a platform's template would.
MH_IMPI_POD_ENV=(I_MPI_FABRICS=shm:ofi FI_PROVIDER=tcp FI_TCP_IFACE=eth0)

# mh_flavour <openmpi|mpich|intel>: sets MH_FLAVOUR and MH_FLAVOUR_ENV, what every pod of a job
# gets for that MPI flavour (MPICH: GJ_MPI, GJ_MPIEXEC and MH_MPICH_POD_ENV; Intel MPI: PATH,
# LD_LIBRARY_PATH and MH_IMPI_POD_ENV). Without mpiexec.mpich (Intel MPI's runtime and the impi-abi
# folder) such a scenario skips (fails under CI=true).
MH_FLAVOUR=openmpi MH_FLAVOUR_ENV=()
mh_flavour() {
  MH_FLAVOUR=$1 MH_FLAVOUR_ENV=()
  case "$MH_FLAVOUR" in
    openmpi) ;;
    mpich)
      if ! command -v mpiexec.mpich >/dev/null; then
        [ "${CI:-}" = true ] && mh_die "mpiexec.mpich missing under CI"
        mh_log "SKIP: no mpiexec.mpich"
        exit "$MH_SKIP"
      fi
      MH_FLAVOUR_ENV=(GJ_MPI=mpich GJ_MPIEXEC=mpiexec.mpich "${MH_MPICH_POD_ENV[@]}") ;;
    intel)
      local impi=${GJ_IMPI_ROOT:-/opt/gj-venvs/impi} abi=${GJ_IMPI_ABI_DIR:-}
      if [ ! -x "$impi/bin/mpiexec.hydra" ] || [ -z "$abi" ] || [ ! -e "$abi/libmpich.so.12" ]; then
        local why="no Intel MPI runtime at GJ_IMPI_ROOT=$impi (scripts/install-deps.sh --impi) or no libmpich.so.12 in GJ_IMPI_ABI_DIR='$abi'"
        [ "${CI:-}" = true ] && mh_die "$why (CI=true)"
        mh_log "SKIP: $why"
        exit "$MH_SKIP"
      fi
      MH_KEEP_PATHS+=":$impi:$abi"
      MH_FLAVOUR_ENV=(PATH="$impi/bin:$MH_POD_PATH" LD_LIBRARY_PATH="$abi:$impi/lib" I_MPI_ROOT="$impi" "${MH_IMPI_POD_ENV[@]}") ;;
    *) mh_die "MPI flavour '$MH_FLAVOUR': use openmpi, mpich or intel" ;;
  esac
}

# mh_looping_job <job>: a 3-pod job (1 slot each, MH_FLAVOUR_ENV in every pod) whose ranks keep
# allreducing for 120 s; returns once every rank is in its loop. For the tests that break a
# running job.
mh_looping_job() {
  mh_up "$1" 2
  mh_agent_job 1 0 1 0 "${MH_FLAVOUR_ENV[@]}" -- "$MH_PROG" --loop 120
  local r log
  log=$(mh_podlog "$(mh_master)")
  for r in 0 1 2; do
    # Not anchored: hydra can join two ranks' output on one line (mh_rank_lines).
    mh_wait_for_log "$log" "LOOP $r iter=0 " 45 || mh_die "rank $r never started its loop"
  done
  mh_log "all ranks are looping"
}

# mh_rank_lines <log>: a copy of the log with every probe report on a line of its own. Hydra
# (MPICH 4.0 has no -ordered-output) forwards rank output in chunks that can join two ranks'
# lines; the reports themselves stay whole. Prints the copy's path.
mh_rank_lines() {
  local out="$1.lines"
  sed -E 's/(RANK [0-9]|ALLREDUCE |TORCHDIST |PYRANK )/\n\1/g' "$1" >"$out"
  echo "$out"
}

# mh_expect_rank_failure <master pod> <start ms> <wait s> <what happened> <least ms> <most ms>:
# the job ends with exit 7 ("a rank failed", README "Exit codes") between <least> and <most> ms
# after <start>; MH_ELAPSED is how long it took.
mh_expect_rank_failure() {
  local master=$1 start=$2 wait=$3 what=$4 least=$5 most=$6
  mh_pod_wait "$master" "$wait"
  MH_ELAPSED=$(( $(mh_now_ms) - start ))
  [ "$MH_RC" != timeout ] || mh_die "the job ($MH_FLAVOUR) still runs $wait s after $what"
  mh_assert_eq "master exit code ($MH_FLAVOUR) after $what" 7 "$MH_RC"
  mh_log "ok: job ($MH_FLAVOUR) ended $MH_ELAPSED ms after $what"
  [ "$MH_ELAPSED" -ge "$least" ] || mh_die "the job ended $MH_ELAPSED ms after $what (want >= $least ms)"
  [ "$MH_ELAPSED" -lt "$most" ] || mh_die "the job ended $MH_ELAPSED ms after $what (want < $most ms)"
}

mh_assert_eq() {  # <what> <expected> <actual>
  [ "$2" = "$3" ] || mh_die "$1: expected '$2', got '$3'"
  mh_log "ok: $1 = '$3'"
}
mh_assert_grep() {  # <what> <regex> <file>
  grep -qE -- "$2" "$3" || mh_die "$1: no line matching /$2/ in $(basename "$3")"
  mh_log "ok: $1"
}
mh_assert_one_line() {  # <what> <fixed string> <file>: exactly one line holds it
  local n
  n=$(grep -cF -- "$2" "$3")
  [ "$n" = 1 ] || mh_die "$1: expected one line with '$2' in $(basename "$3"), found $n"
  mh_log "ok: $1"
}
mh_assert_no_grep() {  # <what> <regex> <file>
  if grep -qE -- "$2" "$3"; then
    mh_die "$1: unexpected line in $(basename "$3"): $(grep -E -m1 -- "$2" "$3")"
  fi
  mh_log "ok: $1"
}

# mh_assert_ranks <log> <np> <host:slots,...>: exactly np RANK lines, rank r on the host that
# --map-by slot puts it on (hosts filled in order), each reporting size np.
mh_assert_ranks() {
  local log=$1 np=$2 spec=$3 r=0 entry host slots i got entries
  IFS=, read -ra entries <<<"$spec"
  for entry in "${entries[@]}"; do
    host=${entry%:*} slots=${entry##*:}
    for ((i = 0; i < slots; i++)); do
      got=$(grep -cE "^RANK $r/$np host=$host( |\$)" "$log")
      [ "$got" = 1 ] || mh_die "rank $r/$np: expected one line 'RANK $r/$np host=$host', found $got"
      r=$((r + 1))
    done
  done
  [ "$r" = "$np" ] || mh_die "placement $spec covers $r ranks but np is $np (test bug)"
  got=$(grep -cE '^RANK ' "$log")
  [ "$got" = "$np" ] || mh_die "expected $np RANK lines, found $got"
  mh_log "ok: $np ranks placed $spec"
}

# mh_assert_no_ranks_left <seconds>: no training process, orted or hydra proxy remains in any pod.
mh_assert_no_ranks_left() {
  local limit=$1 t=0 pod left
  while :; do
    left=""
    for pod in "${MH_PODS[@]}"; do
      left+=$(mh_pod_ps "$pod" | grep -E '^[0-9]+ (mh_probe|mh_probe_mpich|orted|hydra_pmi_proxy|hydra_bstrap_pr|python3) ' | sed "s/^/$pod: /")
    done
    [ -z "$left" ] && break
    [ "$t" -ge $((limit * 10)) ] && mh_die "processes still running ${limit}s after the job ended: $left"
    sleep 0.1; t=$((t + 1))
  done
  mh_log "ok: no rank or orted left on any pod"
}

mh_now_ms() { date +%s%3N; }
