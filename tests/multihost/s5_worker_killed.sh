#!/bin/bash
# Scenario 5: a worker pod dies mid-job (every process of the pod SIGKILLed, as when its node
# fails: its sshd and rank wrappers gone). The job must end within 5 s with exit 7, "a rank
# failed" (README "Exit codes"); the master's failure summary must name the rank of that pod
# (rank 2) and say the pod was lost; no rank, orted or hydra proxy may stay behind on the
# surviving pods. Third argument: openmpi (default), mpich or intel.
source "$(dirname "$0")/scenario.sh"
mh_scenario_init "$1" "$2"
mh_flavour "${3:-openmpi}"
mh_looping_job kill
master=kill-master-0
log=$(mh_podlog "$master")
mh_log "killing every process of kill-worker-1"
start=$(mh_now_ms)
mh_pod_kill kill-worker-1 KILL
mh_expect_rank_failure "$master" "$start" 40 "a worker pod died" 0 5000
mh_assert_one_line "one failure summary naming the lost pod's rank" \
  "rank failure: rank 2 (local rank 0, pod kill-worker-1) lost: " "$log"
mh_assert_one_line "the summary says the pod was lost" "pod kill-worker-1 lost: every rank wrapper there" "$log"
mh_assert_no_ranks_left 15
