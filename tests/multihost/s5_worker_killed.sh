#!/bin/bash
# Scenario 5: a worker pod dies mid-job (every process of the pod SIGKILLed, as when its node
# fails). The job must end within a bounded time with the exit code the flavour's launcher gives
# for a lost host (README "Exit codes": Open MPI 4.1's mpirun 205, MPICH 4.0's hydra 255, Intel
# MPI 2021.18's hydra 255), the master must say so in one log line, and no rank, orted or hydra
# proxy may stay behind on the surviving pods. Third argument: openmpi (default), mpich or intel.
source "$(dirname "$0")/scenario.sh"
mh_scenario_init "$1" "$2"
mh_flavour "${3:-openmpi}"
mh_looping_job kill
master=kill-master-0
mh_log "killing every process of kill-worker-1"
start=$(mh_now_ms)
mh_pod_kill kill-worker-1 KILL
mh_pod_wait "$master" 40
elapsed=$(( $(mh_now_ms) - start ))
[ "$MH_RC" != timeout ] || mh_die "the job ($MH_FLAVOUR) still runs 40 s after a worker died"
declare -A lost_host_code=([openmpi]=205 [mpich]=255 [intel]=255)
mh_assert_eq "master exit code ($MH_FLAVOUR) for a lost host" "${lost_host_code[$MH_FLAVOUR]}" "$MH_RC"
mh_log "ok: job ($MH_FLAVOUR) ended $elapsed ms after the worker died"
mh_assert_one_line "the master says how the job ended" "mpiexec exited with status $MH_RC; gj-mpirun exits with it" \
  "$(mh_podlog "$master")"
mh_assert_no_ranks_left 15
