#!/bin/bash
# Scenario 13: two pods of 1 CPU each (master + 1 worker, the platform's CPU case) on one machine
# whose cores both pods see, as pods sharing a Kubernetes node do. Through gj-mpirun's default
# command no rank is pinned (each may run on every CPU of its pod), and a 4-byte allreduce across
# the pods takes less than 10x their TCP round trip (and at least 250 us: this machine is shared,
# and a busy neighbour delays an unpinned rank by more than 10 round trips of the fast namespace
# bridge too); ranks pinned to the same core wait a scheduler slice (milliseconds) for each other. The control: the same job with the user's
# `--bind-to core` is pinned (the user's binding wins), and its time is logged.
# Arguments: <gj-mpirun> <mh_probe> <mh_tcp_rtt> [openmpi|intel] (Intel MPI: gj-mpirun's default is
# -genv I_MPI_PIN off, the user's binding the control's I_MPI_PIN_PROCESSOR_LIST=0).
source "$(dirname "$0")/scenario.sh"
mh_scenario_init "$1" "$2"
rtt_tool=$(realpath -e "${3:-}") || mh_die "mh_tcp_rtt '${3:-}' not found; build it first"
mh_flavour "${4:-openmpi}"
user_binding=(--mpi-arg=--bind-to --mpi-arg=core) user_reason='--bind-to core'
if [ "$MH_FLAVOUR" = intel ]; then
  user_binding=(--mpi-arg=-genv --mpi-arg=I_MPI_PIN_PROCESSOR_LIST --mpi-arg=0) user_reason=I_MPI_PIN_PROCESSOR_LIST
fi
cpus=$(nproc)
if [ "$cpus" -lt 2 ]; then
  [ "${CI:-}" = true ] && mh_die "one CPU here: two pods need two cores to show the binding (CI=true)"
  mh_log "SKIP: one CPU here: two pods on one core wait for each other whatever the binding"
  exit "$MH_SKIP"
fi
mh_up bind 1
master=bind-master-0 worker=bind-worker-0

# The baseline: TCP between the two pods' namespaces.
ip netns exec "${MH_NS[$worker]}" "$rtt_tool" serve 7777 &
server=$!
rtt=$(ip netns exec "${MH_NS[$master]}" "$rtt_tool" ping "${MH_ADDR[$worker]}" 7777 2000) || mh_die "TCP round trip: $rtt"
wait "$server"
rtt_us=$(sed -nE 's/^TCP_RTT n=[0-9]+ median_us=([0-9.]+)$/\1/p' <<<"$rtt")
[ -n "$rtt_us" ] || mh_die "no round trip measured: $rtt"
mh_log "TCP round trip between the pods: $rtt_us us (median of 2000)"

# run_job <what> <allreduces> [gj-mpirun args before the program...]: sets allreduce_us and
# last_log (the master's log, kept as <log>.<what>).
run_job() {
  local what=$1 n=$2 log; shift 2
  mh_agent_job 1 0 1 0 "${MH_FLAVOUR_ENV[@]}" -- "$@" "$MH_PROG" --affinity --time "$n"
  mh_pod_wait "$master" 60 || mh_die "$what: the job still runs after 60 s"
  log=$(mh_podlog "$master")
  mh_assert_eq "$what: master exit code" 0 "$MH_RC"
  allreduce_us=$(sed -nE 's/^ALLREDUCE_TIME n=[0-9]+ median_us=([0-9.]+)$/\1/p' "$log")
  [ -n "$allreduce_us" ] || mh_die "$what: no ALLREDUCE_TIME line"
  mh_log "$what: 4-byte allreduce across the pods: $allreduce_us us (median of $n)"
  mv "$log" "$log.$what"
  mh_pod_kill "$worker"; mh_pod_wait "$worker" 10
  last_log=$(mh_rank_lines "$log.$what")  # hydra may join two ranks' lines
}

run_job default 2000
mh_assert_grep "default: the dry-run reason is in the log" '\] cpu binding: off, so that ranks of pods sharing a node' "$last_log"
for host in "$master" "$worker"; do
  mh_assert_grep "default: the rank on $host may use all $cpus CPUs" "^RANK [01]/2 host=$host cpus=$cpus\$" "$last_log"
done
limit=$(awk -v r="$rtt_us" 'BEGIN {l = 10 * r; if (l < 250) l = 250; printf "%.1f", l}')
awk -v a="$allreduce_us" -v l="$limit" 'BEGIN {exit !(a < l)}' \
  || mh_die "default: the allreduce takes $allreduce_us us, over max(10x the TCP round trip, 250 us) = $limit us: ranks are waiting for CPU"
mh_log "ok: default allreduce $allreduce_us us < max(10 x round trip, 250 us) = $limit us"

run_job user_binding 300 "${user_binding[@]}"
mh_assert_grep "user binding: the reason names it" "\\] cpu binding: yours \\($user_reason\\)" "$last_log"
for host in "$master" "$worker"; do
  mh_assert_grep "user binding: the rank on $host is pinned to one CPU" "^RANK [01]/2 host=$host cpus=1\$" "$last_log"
done
mh_log "with $user_reason the allreduce takes $allreduce_us us ($(awk -v a="$allreduce_us" -v r="$rtt_us" 'BEGIN {printf "%.0f", a / r}')x the round trip)"
