#!/bin/bash
# Scenario 12: a rank's program fails. On a 3-pod job (1 slot each), rank 2 (on worker-1)
# fails after the first allreduce, without MPI_Finalize, while ranks 0 and 1 go on
# allreducing. Fourth argument: exit (default: it exits with 7) or kill (it dies of SIGKILL, as
# the OOM killer ends it). The master pod must exit with the rank's status, 7 or 137 (README
# "Exit codes": once mpiexec runs, the job's status is the pod's), within 30 s; its log must
# say so in one line; no rank, orted or hydra proxy may stay behind on any pod. Third argument:
# openmpi (default), mpich or intel.
source "$(dirname "$0")/scenario.sh"
mh_scenario_init "$1" "$2"
mh_flavour "${3:-openmpi}"
case "${4:-exit}" in
  exit) fail=7 want=7 ;;
  kill) fail=-9 want=137 ;;
  *) mh_die "failure '$4': use exit or kill" ;;
esac
mh_up exit 2
master=exit-master-0
log=$(mh_podlog "$master")
mh_agent_job 1 0 1 0 "${MH_FLAVOUR_ENV[@]}" -- "$MH_PROG" --loop 120 --fail 2 "$fail"
mh_wait_for_log "$log" "^FAIL 2 exit=$fail" 45 || mh_die "rank 2 never reached its failure"
start=$(mh_now_ms)
mh_pod_wait "$master" 30
elapsed=$(( $(mh_now_ms) - start ))
mh_assert_eq "master exit code ($MH_FLAVOUR) when rank 2 ends with status $want" "$want" "$MH_RC"
mh_log "ok: the master ended $elapsed ms after rank 2 failed"
mh_assert_one_line "the master says how the job ended" "mpiexec exited with status $want; gj-mpirun exits with it" "$log"
mh_assert_no_ranks_left 15
