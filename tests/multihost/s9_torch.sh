#!/bin/bash
# Scenario 9: an unchanged torch.distributed (gloo) script on a 3-pod job, under the MPI flavour
# given as the third argument (openmpi or mpich). Master 2 slots, workers 1 each: np = 4, ranks
# 0-1 on the master (GROUP_RANK 0), rank 2 on worker 0 (1), rank 3 on worker 1 (2). The script
# checks every torchrun variable, an allreduce and one DDP step (tests/agent/torch_dist_check.py);
# every pod's CPUs equal its ranks, so torch runs 1 thread per rank.
source "$(dirname "$0")/scenario.sh"
mh_scenario_init "$1" "$2"
flavour=${3:?flavour: openmpi or mpich}
mh_flavour "$flavour"
extra=(GJ_PYTHON=/usr/bin/python3 "${MH_FLAVOUR_ENV[@]}")
mh_up tdist 2
master=tdist-master-0
mh_agent_job 2 0 1 0 "${extra[@]}" -- "$MH_PROG"
mh_pod_wait "$master" 60
log=$(mh_rank_lines "$(mh_podlog "$master")")
mh_assert_eq "master exit code ($flavour)" 0 "$MH_RC"
mh_assert_no_grep "no rank failed a check" '^TORCHDIST FAIL' "$log"
want=("0 tdist-master-0 0/2 0" "1 tdist-master-0 1/2 0" "2 tdist-worker-0 0/1 1" "3 tdist-worker-1 0/1 2")
for w in "${want[@]}"; do
  read -r r host local group <<<"$w"
  mh_assert_grep "rank $r on $host, LOCAL_RANK/LOCAL_WORLD_SIZE $local, GROUP_RANK $group" \
    "^TORCHDIST ok rank=$r/4 host=$host local=$local group=$group master=tdist-master-0\\.tdist:[0-9]+ threads=1\$" "$log"
done
