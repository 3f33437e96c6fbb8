#!/bin/bash
# Scenario 3: late workers. All pods start together, but worker-0's gj-mpirun (so its sshd)
# starts 3 s late, and worker-1's name enters the hosts files only after 5 s (a headless
# Service record appearing late). The master must wait for both, say so in its log, then
# run the job successfully.
source "$(dirname "$0")/scenario.sh"
mh_scenario_init "$@"
MH_LATE_NAMES="late-worker-1" mh_up late 2
master=late-master-0
log=$(mh_podlog "$master")
start=$(mh_now_ms)
mh_agent_pod "$master" 1 0 1 0 GJ_READY_TIMEOUT=60 -- "$MH_PROG"
mh_agent_pod late-worker-1 1 0 1 0 -- "$MH_PROG"
sleep 3
mh_agent_pod late-worker-0 1 0 1 0 -- "$MH_PROG"
sleep 2
mh_hosts_add late-worker-1
ready_ms=$(mh_now_ms)
mh_log "late-worker-1.late is resolvable from now on"
# How fast the gate notices: Open MPI's orted appears on late-worker-1 once mpiexec started.
if mh_wait_for_process late-worker-1 orted 30; then
  latency=$(( $(mh_now_ms) - ready_ms ))
  mh_log "orted started on late-worker-1 $latency ms after its name appeared (gate + mpiexec + ssh)"
  [ "$latency" -le 3000 ] || mh_die "the master needed $latency ms to start the job after the last host became ready"
fi
mh_pod_wait "$master" 45
end=$(mh_now_ms)
mh_assert_eq "master exit code after waiting" 0 "$MH_RC"
mh_assert_ranks "$log" 3 late-master-0:1,late-worker-0:1,late-worker-1:1
mh_assert_grep "allreduce over 3 ranks" '^ALLREDUCE ok sum=6 expected=6$' "$log"
# The wait is visible: the master's log names both late hosts before any rank ran.
before=$(sed -n '/^RANK /q;p' "$log")
grep -q 'late-worker-0\.late' <<<"$before" || mh_die "master log does not mention waiting for late-worker-0.late: $before"
grep -q 'late-worker-1\.late' <<<"$before" || mh_die "master log does not mention waiting for late-worker-1.late: $before"
grep -qiE 'resolv' <<<"$before" || mh_die "master log does not say late-worker-1.late was not resolvable"
mh_log "ok: master log shows the wait for both late hosts"
mh_log "job ended $((end - ready_ms)) ms after the last name appeared ($((end - start)) ms after start)"
