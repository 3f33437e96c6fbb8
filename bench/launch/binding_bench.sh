#!/bin/bash
# Cross-pod allreduce through gj-mpirun's default launch vs a hand-written mpiexec with and
# without CPU binding (docs/benchmarks.md, "CPU binding across pods"), on the namespaced
# cluster of tests/multihost: two
# pods of 1 CPU each (master + 1 worker, the platform's CPU case) on this machine, whose cores
# both pods see, as pods sharing a Kubernetes node do. The job is gj_allreduce_bench (gjAllReduce
# and MPI_Allreduce alternating, f32 sum) across the two pods. The worker runs gj-mpirun (sshd)
# throughout; the master's command differs:
#   gj-mpirun            the platform's master environment, `gj-mpirun <bench>` (default binding)
#   hand, bound          tests/multihost/plain_pod.sh's mpiexec, Open MPI's default binding
#                        (`--bind-to core` for np <= 2): what the platform's example script runs
#   hand, --bind-to none the same with `--bind-to none` (the Kubeflow MPIJob recipe's choice)
# Plus the TCP round trip between the two pods (tests/multihost/mh_tcp_rtt).
# Usage: binding_bench.sh --gj <gj-mpirun> --bench <gj_allreduce_bench> --rtt <mh_tcp_rtt>
#                         [--maxbytes 64M] [--rounds 3] [--out FILE.md]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../tests/multihost/scenario.sh"

maxbytes=64M rounds=3 out="" gj="" bench="" rtt_tool=""
usage="usage: binding_bench.sh --gj <gj-mpirun> --bench <gj_allreduce_bench> --rtt <mh_tcp_rtt> [--maxbytes 64M] [--rounds 3] [--out FILE.md]"
while [ $# -gt 0 ]; do
  case "$1" in
    --gj) gj=$2; shift 2 ;;
    --bench) bench=$2; shift 2 ;;
    --rtt) rtt_tool=$2; shift 2 ;;
    --maxbytes) maxbytes=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || mh_die "--rounds '$rounds' is not a positive integer"
rtt_tool=$(realpath -e "$rtt_tool") || mh_die "--rtt: mh_tcp_rtt not found; $usage"
mh_scenario_init "$gj" "$bench"
mh_up pin 1
master=pin-master-0 worker=pin-worker-0
log=$(mh_podlog "$master")
bench_args=(--types f32 --minbytes 4 --maxbytes "$maxbytes" --rounds "$rounds")

ip netns exec "${MH_NS[$worker]}" "$rtt_tool" serve 7777 &
server=$!
rtt=$(ip netns exec "${MH_NS[$master]}" "$rtt_tool" ping "${MH_ADDR[$worker]}" 7777 5000) || mh_die "round trip: $rtt"
wait "$server"
rtt_us=$(sed -nE 's/^TCP_RTT n=[0-9]+ median_us=([0-9.]+)$/\1/p' <<<"$rtt")
mh_log "TCP round trip between the pods: $rtt_us us"

mh_agent_pod "$worker" 1 0 1 0 -- "$MH_PROG"
declare -A table
run_once() {  # <gj|bound|unbound>: fills table[<kind>,<size>] = "gj_us mpi_us"
  local kind=$1 t0 size g m
  : >"$log"
  t0=$(mh_now_ms)
  case "$kind" in
    gj) mh_agent_pod "$master" 1 0 1 0 -- "$MH_PROG" "${bench_args[@]}" ;;
    bound) mh_pod_start "$master" -- "$MH_DIR/plain_pod.sh" mpiexec pin-master-0.pin:1,pin-worker-0.pin:1 2 \
             "$MH_PROG" "${bench_args[@]}" ;;
    unbound) mh_pod_start "$master" -- "$MH_DIR/plain_pod.sh" mpiexec pin-master-0.pin:1,pin-worker-0.pin:1 2 \
               --bind-to none "$MH_PROG" "${bench_args[@]}" ;;
  esac
  mh_pod_wait "$master" 1800 || mh_die "$kind: still running after 30 min"
  [ "$MH_RC" = 0 ] || mh_die "$kind run exited $MH_RC: $(tail -n 5 "$log")"
  grep -q '^# lowest ratio .*, wrong elements 0$' "$log" || mh_die "$kind run: wrong results or no summary"
  while read -r size g m; do table[$kind,$size]="$g $m"; sizes[$size]=1; done \
    < <(awk '/^ +[0-9]+ +[0-9]+ +f32 +sum / {print $1, $5, $9}' "$log")
  mh_log "$kind: done in $(( $(mh_now_ms) - t0 )) ms"
  cp "$log" "$log.$kind"
}
declare -A sizes
for kind in gj bound unbound; do run_once "$kind"; done

human() { awk -v b="$1" 'BEGIN {split("B KiB MiB GiB", u); i = 1; while (b >= 1024 && i < 4) {b /= 1024; i++}; printf "%d %s", b, u[i]}'; }
rows=""
for size in $(printf '%s\n' "${!sizes[@]}" | sort -n); do
  read -r gg gm <<<"${table[gj,$size]}"
  read -r bg bm <<<"${table[bound,$size]}"
  read -r ug um <<<"${table[unbound,$size]}"
  ratio=$(awk -v b="$bg" -v g="$gg" 'BEGIN {printf "%.0f", b / g}')
  rows+="| $(human "$size") | $gg | $gm | $bg | $bm | $ug | $um | ${ratio}x |"$'\n'
done
report=$(cat <<MD
| size | gj-mpirun default: gj (us) | MPI (us) | hand-written, bound: gj (us) | MPI (us) | hand-written, \`--bind-to none\`: gj (us) | MPI (us) | bound / gj-mpirun (gj) |
|---:|---:|---:|---:|---:|---:|---:|---:|
${rows}
TCP round trip between the two pods: **$rtt_us us** (median of 5000, one byte each way).
MD
)
echo "$report"
if [ -n "$out" ]; then
  {
    echo "- command: \`bench/launch/binding_bench.sh --gj <build>/agent/gj-mpirun --bench <build>/bench/gj_allreduce_bench --rtt <build>/tests/multihost/mh_tcp_rtt --maxbytes $maxbytes --rounds $rounds\`"
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); load average at the end: $(cut -d" " -f1-3 /proc/loadavg) (shared machine)"
    echo "- machine: $(nproc) CPUs ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), $(uname -sr), $(mpiexec --version | head -n1)"
    echo "- job: 2 pods of 1 CPU each (network namespaces on one machine, both seeing every core), 1 rank each; time = the slower rank's mean per call, best of $rounds alternating batches (gj_allreduce_bench)"
    echo
    echo "$report"
  } >"$out"
  mh_log "results written to $out"
fi
