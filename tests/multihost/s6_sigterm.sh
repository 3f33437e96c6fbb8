#!/bin/bash
# Scenario 6: SIGTERM to the master pod's command (PID 1 of the pod, gj-mpirun or the mpiexec
# it became), as the kubelet sends when the job is deleted. Every rank on every host must end,
# and the pod's exit code must say it was SIGTERM (128+15 = 143).
source "$(dirname "$0")/scenario.sh"
mh_scenario_init "$@"
mh_looping_job term
master=term-master-0
pid1=$(mh_pod_init_pid "$master")
[ -n "$pid1" ] || mh_die "cannot find the master pod's PID 1"
mh_log "sending SIGTERM to the master pod's PID 1 (host pid $pid1: $(tr '\0' ' ' </proc/$pid1/cmdline))"
start=$(mh_now_ms)
kill -TERM "$pid1"
mh_pod_wait "$master" 30
elapsed=$(( $(mh_now_ms) - start ))
[ "$MH_RC" != timeout ] || mh_die "the master still runs 30 s after SIGTERM"
mh_log "master ended $elapsed ms after SIGTERM with exit code $MH_RC"
mh_assert_no_ranks_left 15
mh_assert_eq "master exit code reflects SIGTERM" 143 "$MH_RC"
