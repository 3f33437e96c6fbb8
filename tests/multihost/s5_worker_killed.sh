#!/bin/bash
# Scenario 5: a worker pod dies mid-job (every process of the pod SIGKILLed, as when its node
# fails). The job must end with a non-zero exit code within a bounded time, and no rank or
# orted may stay behind on the surviving pods.
source "$(dirname "$0")/scenario.sh"
mh_scenario_init "$@"
mh_looping_job kill
master=kill-master-0
mh_log "killing every process of kill-worker-1"
start=$(mh_now_ms)
mh_pod_kill kill-worker-1 KILL
mh_pod_wait "$master" 40
elapsed=$(( $(mh_now_ms) - start ))
[ "$MH_RC" != timeout ] || mh_die "the job still runs 40 s after a worker died"
[ "$MH_RC" -ne 0 ] || mh_die "the job exited 0 although a worker died"
mh_log "ok: job ended with exit code $MH_RC, $elapsed ms after the worker died"
mh_assert_no_ranks_left 15
