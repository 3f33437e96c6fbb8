#!/usr/bin/env bash
# Whole-process time of planning a launch: `gj-mpirun --dry-run` versus the platform's example
# bash logic (seed 004, copied below with its two side effects, starting sshd and exec'ing
# mpiexec, replaced by echo), on the same machine in the same run. Before timing, both must
# print the same MPI_HOSTS and MPI_NP for the four platform cases and for every measured size.
#
# Usage: plan_bench.sh <gj-mpirun> [--sizes "64 4000"] [--large 10000] [--reps 30]
#   --large N: also time gj-mpirun alone on N hosts read from a hosts file (MPI_HOST cannot hold
#   that many: one environment string is limited to 128 KiB).
set -euo pipefail

gj=${1:?usage: plan_bench.sh <gj-mpirun> [--sizes "64 4000"] [--large 10000] [--reps 30]}
shift
sizes="64 4000"
large=10000
reps=30
while [ $# -gt 0 ]; do
  case "$1" in
    --sizes) sizes=$2; shift 2 ;;
    --large) large=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    *) echo "plan_bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '#!/bin/sh\nexit 0\n' > "$work/train.sh"
chmod +x "$work/train.sh"

# ---- the platform example (seed 004), master part; side effects replaced by echo ----------
cat > "$work/example.sh" <<'EOF'
set -euo pipefail

ROLE="${GJ_TRAINING_ROLE}"
JOB_NAME="${GJ_TRAINING_VC_JOB_NAME}"
POD_NAME="${GJ_TRAINING_POD_NAME}"

MASTER_CPU="${GJ_TRAINING_MASTER_CPU_LIMIT}"
MASTER_GPU="${GJ_TRAINING_MASTER_GPU_LIMIT}"
MASTER_REPLICAS="${GJ_TRAINING_MASTER_REPLICAS}"

WORKER_CPU="${GJ_TRAINING_WORKER_CPU_LIMIT}"
WORKER_GPU="${GJ_TRAINING_WORKER_GPU_LIMIT}"
WORKER_REPLICAS="${GJ_TRAINING_WORKER_REPLICAS}"

if [[ "${ROLE}" == "worker" ]]; then
  echo "Starting MPI worker"
  echo mkdir -p /var/run/sshd
  echo exec /usr/sbin/sshd -D
  exit 0
fi

build_worker_hosts(){
  local slots="$1"

  if [[ -z "${MPI_HOST:-}" ]]; then
    return 0
  fi

  echo "${MPI_HOST}" | awk -v slots="${slots}" -F',' '
  {
    sep=""
    for(i=1;i<=NF;i++){
      if($i!=""){
        printf "%s%s:%s",sep,$i,slots
        sep=",";
      }
    }
  }'
}

MASTER_HOST="${POD_NAME}.${JOB_NAME}"

if [[ "${MASTER_GPU}" -eq 0 && "${WORKER_GPU}" -eq 0 ]]; then

  WORKER_HOSTS=$(build_worker_hosts "${WORKER_CPU}")

  MPI_HOSTS="${MASTER_HOST}:${MASTER_CPU}"

  if [[ -n "${WORKER_HOSTS}" ]]; then
    MPI_HOSTS="${MPI_HOSTS},${WORKER_HOSTS}"
  fi

  MPI_NP=$((MASTER_REPLICAS*MASTER_CPU + WORKER_REPLICAS*WORKER_CPU))

elif [[ "${MASTER_GPU}" -gt 0 && "${WORKER_GPU}" -gt 0 ]]; then

  WORKER_HOSTS=$(build_worker_hosts "${WORKER_GPU}")

  MPI_HOSTS="${MASTER_HOST}:${MASTER_GPU}"

  if [[ -n "${WORKER_HOSTS}" ]]; then
    MPI_HOSTS="${MPI_HOSTS},${WORKER_HOSTS}"
  fi

  MPI_NP=$((MASTER_REPLICAS*MASTER_GPU + WORKER_REPLICAS*WORKER_GPU))

elif [[ "${MASTER_GPU}" -eq 0 && "${WORKER_GPU}" -gt 0 ]]; then

  MPI_HOSTS=$(build_worker_hosts "${WORKER_GPU}")

  MPI_NP=$((WORKER_REPLICAS*WORKER_GPU))

else

  MPI_HOSTS="${MASTER_HOST}:${MASTER_GPU}"

  MPI_NP=$((MASTER_REPLICAS*MASTER_GPU))

fi

if [[ "${MPI_NP}" -le 0 ]]; then
  echo "ERROR: invalid MPI_NP=${MPI_NP}"
  exit 1
fi

echo mkdir -p /var/run/sshd
echo /usr/sbin/sshd -D '&'

echo "MPI_HOST=${MPI_HOST:-}"
echo "MPI_HOSTS=${MPI_HOSTS}"
echo "MPI_NP=${MPI_NP}"

echo exec mpiexec \
  --allow-run-as-root \
  --host "${MPI_HOSTS}" \
  -np "${MPI_NP}" \
  --map-by slot \
 "$1"
EOF

# set_env <master cpu> <master gpu> <worker cpu> <worker gpu> <workers>: exports a master
# pod's platform variables with MPI_HOST listing <workers> hosts.
set_env() {
  export GJ_TRAINING_ROLE=master GJ_TRAINING_VC_JOB_NAME=job GJ_TRAINING_POD_NAME=job-master-0
  export GJ_TRAINING_MASTER_CPU_LIMIT=$1 GJ_TRAINING_MASTER_GPU_LIMIT=$2 GJ_TRAINING_MASTER_REPLICAS=1
  export GJ_TRAINING_WORKER_CPU_LIMIT=$3 GJ_TRAINING_WORKER_GPU_LIMIT=$4 GJ_TRAINING_WORKER_REPLICAS=$5
  local hosts="" i
  for ((i = 0; i < $5; i++)); do hosts+="${hosts:+,}job-worker-$i.job"; done
  export MPI_HOST=$hosts
  unset GJ_HOSTS_FILE
}

# Both must agree on MPI_HOSTS and MPI_NP.
conform() {
  local want got
  want=$(bash "$work/example.sh" "$work/train.sh" | grep -E '^MPI_(HOSTS|NP)=')
  got=$(GJ_NO_WAIT=1 "$gj" --dry-run --mpi openmpi "$work/train.sh" 2>/dev/null | grep -E '^MPI_(HOSTS|NP)=')
  if [ "$want" != "$got" ]; then
    echo "plan_bench.sh: MISMATCH for $*: example printed" >&2
    echo "$want" | cut -c1-300 >&2
    echo "gj-mpirun printed" >&2
    echo "$got" | cut -c1-300 >&2
    exit 1
  fi
}

set_env 4 0 8 0 3; conform "both CPU"
set_env 16 8 16 8 3; conform "both GPU"
set_env 4 0 16 4 3; conform "workers only"
set_env 16 2 4 0 3; conform "master only"
set_env 16 2 4 0 0; conform "master only, no workers"
set_env 2 0 1 0 0; conform "CPU, no workers"

# "<wall ms> <cpu ms>": means per run of "$@" over $reps runs. Wall time is what a pod waits;
# CPU time (user+sys of the children, from bash's `times`) is steadier on a loaded machine.
time_ms() {
  local t0 t1 cpu
  t0=$(date +%s%N)
  cpu=$( (for ((i = 0; i < reps; i++)); do "$@" > /dev/null; done; times) | tail -1)
  t1=$(date +%s%N)
  # cpu looks like "0m0.120s 0m0.031s" (children's user and system time)
  awk -v ns=$((t1 - t0)) -v n="$reps" -v cpu="$cpu" 'BEGIN {
    split(cpu, t, " "); total = 0
    for (k = 1; k <= 2; k++) { split(t[k], p, "m"); sub("s", "", p[2]); total += p[1] * 60 + p[2] }
    printf "%.2f %.2f\n", ns / n / 1e6, total * 1000 / n }'
}

printf '| hosts | source | gj-mpirun --dry-run wall ms (CPU ms) | platform example bash wall ms (CPU ms) | example / gj-mpirun, wall (CPU) |\n'
printf '|---:|---|---:|---:|---:|\n'
for n in $sizes; do
  set_env 16 8 16 8 "$n"
  conform "$n hosts"
  read -r gj_wall gj_cpu < <(time_ms "$gj" --dry-run --mpi openmpi "$work/train.sh")
  read -r ex_wall ex_cpu < <(time_ms bash "$work/example.sh" "$work/train.sh")
  ratio=$(awk -v a="$ex_wall" -v b="$gj_wall" -v c="$ex_cpu" -v d="$gj_cpu" \
    'BEGIN { printf "%.1fx (%s)", a / b, (d > 0 ? sprintf("%.1fx", c / d) : "-") }')
  printf '| %d | MPI_HOST | %s (%s) | %s (%s) | %s |\n' "$((n + 1))" "$gj_wall" "$gj_cpu" "$ex_wall" "$ex_cpu" "$ratio"
done
if [ "$large" -gt 0 ]; then
  set_env 16 8 16 8 0
  export GJ_TRAINING_WORKER_REPLICAS=$large
  unset MPI_HOST
  for ((i = 0; i < large; i++)); do echo "job-worker-$i.job"; done > "$work/worker.host"
  export GJ_HOSTS_FILE="$work/worker.host"
  # Each "job-worker-N.job:8," is >= 20 bytes: from 6,000 hosts on the list passes 96 KiB.
  chosen=$("$gj" --dry-run --mpi openmpi "$work/train.sh" | grep '^# hosts: ')
  case "$chosen" in
    *hostfile*) [ "$large" -ge 6000 ] || { echo "plan_bench.sh: $large hosts chose a hostfile" >&2; exit 1; } ;;
    *) [ "$large" -lt 6000 ] || { echo "plan_bench.sh: $large hosts did not choose a hostfile" >&2; exit 1; } ;;
  esac
  read -r gj_wall gj_cpu < <(time_ms "$gj" --dry-run --mpi openmpi "$work/train.sh")
  printf '| %d | hosts file | %s (%s) | (cannot: MPI_HOST > 128 KiB) | - |\n' "$((large + 1))" "$gj_wall" "$gj_cpu"
fi
