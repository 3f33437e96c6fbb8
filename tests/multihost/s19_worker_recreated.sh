#!/bin/bash
# Scenario 19: restarts (docs/agent.md "Restarts and stops"). A worker pod dies mid-job (every
# process SIGKILLed) under GJ_MAX_RESTARTS=1, and the platform re-creates it under its name
# (Volcano's RestartTask, a container restarted in place). The master must print the attempt's
# summary and one restart line, wait at the readiness gate for the new pod, start the job
# again with GJ_RESTART_COUNT=1 and end 0 when the second attempt's ranks finish. Third
# argument: openmpi (default) or mpich.
source "$(dirname "$0")/scenario.sh"
mh_scenario_init "$1" "$2"
mh_flavour "${3:-openmpi}"
mh_up rec 2
args=("${MH_FLAVOUR_ENV[@]}" GJ_MAX_RESTARTS=1 -- "$MH_PROG" --env GJ_RESTART_COUNT --loop 6)
mh_agent_job 1 0 1 0 "${args[@]}"
master=rec-master-0
log=$(mh_podlog "$master")
for r in 0 1 2; do
  mh_wait_for_log "$log" "LOOP $r iter=0 " 45 || mh_die "rank $r never started its loop"
done
mh_log "killing every process of rec-worker-1"
mh_pod_kill rec-worker-1 KILL
mh_wait_for_log "$log" "attempt 1 of 2 failed after [0-9.]+ s \(rank failure: rank 2 " 40 \
  || mh_die "no restart line after the worker pod died"
sleep 2  # the gate is waiting now: the platform re-creates the pod a little later
mh_log "re-creating rec-worker-1 under its name"
mh_agent_pod rec-worker-1 1 0 1 0 "${args[@]}"
mh_pod_wait "$master" 90 || mh_die "the master still runs 90 s after the worker came back"
mh_assert_eq "the master's status after the second attempt" 0 "$MH_RC"
mh_assert_one_line "one restart line" "starting attempt 2 of 2 once every host is ready" "$log"
mh_assert_grep "the first attempt's summary names the lost pod's rank" \
  "rank failure: rank 2 \(local rank 0, pod rec-worker-1\) lost: " "$log"
lines=$(mh_rank_lines "$log")
for r in 0 1 2; do
  mh_assert_grep "rank $r of the second attempt sees GJ_RESTART_COUNT=1" "RANK $r/3 .*GJ_RESTART_COUNT=1" "$lines"
done
mh_assert_eq "gates passed (one per attempt)" 2 "$(grep -c 'host(s) ready after' "$log")"
