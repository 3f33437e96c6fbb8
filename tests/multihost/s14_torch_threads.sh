#!/bin/bash
# Scenario 14: the threads torch uses on each rank. A GPU-shaped job (the programs run on CPU):
# master 4 CPUs and 2 GPUs (2 ranks), 2 workers with 6 CPUs and 2 GPUs each (2 ranks each).
# With OMP_NUM_THREADS unset every rank gets its pod's CPUs / its pod's ranks: torch runs 2
# threads on the master's ranks and 3 on the workers' (unpinned, torch would start one per core
# of the machine); with OMP_NUM_THREADS=1 in the job's environment every rank keeps 1.
# Arguments: <gj-mpirun> <torch_dist_check.py>
source "$(dirname "$0")/scenario.sh"
mh_scenario_init "$1" "$2"
extra=(GJ_PYTHON=/usr/bin/python3)
mh_up thr 2
master=thr-master-0

check_threads() {  # <what> <master threads> <worker threads>
  local log r host want
  log=$(mh_rank_lines "$(mh_podlog "$master")")
  mh_assert_no_grep "$1: no rank failed a check" '^TORCHDIST FAIL' "$log"
  for r in 0 1 2 3 4 5; do
    host=thr-master-0 want=$2
    [ "$r" -ge 2 ] && host=thr-worker-$(( (r - 2) / 2 )) want=$3
    mh_assert_grep "$1: rank $r on $host runs $want torch threads" \
      "^TORCHDIST ok rank=$r/6 host=$host .* threads=$want\$" "$log"
  done
}

mh_agent_job 4 2 6 2 "${extra[@]}" -- "$MH_PROG"
mh_pod_wait "$master" 90 || mh_die "the job still runs after 90 s"
mh_assert_eq "master exit code" 0 "$MH_RC"
mh_assert_grep "the master logs the threads it chose" \
  '\] threads: OMP_NUM_THREADS=2 on thr-master-0\.thr \(4 CPU\(s\) / 2 rank\(s\)\), OMP_NUM_THREADS=3 on each of 2 hosts like thr-worker-0\.thr \(6 CPU\(s\) / 2 rank\(s\)\)' \
  "$(mh_podlog "$master")"
check_threads "default" 2 3
mv "$(mh_podlog "$master")" "$(mh_podlog "$master").default"

for w in thr-worker-0 thr-worker-1; do mh_pod_kill "$w"; mh_pod_wait "$w" 10; done
mh_agent_job 4 2 6 2 "${extra[@]}" OMP_NUM_THREADS=1 -- "$MH_PROG"
mh_pod_wait "$master" 90 || mh_die "the job with OMP_NUM_THREADS=1 still runs after 90 s"
mh_assert_eq "master exit code (OMP_NUM_THREADS=1)" 0 "$MH_RC"
check_threads "user's OMP_NUM_THREADS=1" 1 1
