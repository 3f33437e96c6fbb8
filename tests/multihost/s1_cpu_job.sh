#!/bin/bash
# Scenario 1: CPU job, master + 2 workers. Slots come from the CPU limits (master 1, workers
# 2 each), so np = 5 with rank 0 on the master and two ranks on each worker; every rank
# reports its host; the allreduce gives exactly 1+2+3+4+5 = 15; the master pod exits 0 without
# a failure summary; no pod's log (the master's included) holds a line of the readiness probe
# (kex_exchange_identification, "Connection closed by ...").
source "$(dirname "$0")/scenario.sh"
mh_scenario_init "$@"
mh_up cpu 2
start=$(mh_now_ms)
mh_agent_job 1 0 2 0 -- "$MH_PROG"
mh_pod_wait cpu-master-0 45
log=$(mh_podlog cpu-master-0)
mh_assert_eq "master pod exit code" 0 "$MH_RC"
mh_assert_ranks "$log" 5 cpu-master-0:1,cpu-worker-0:2,cpu-worker-1:2
mh_assert_grep "allreduce over 5 ranks" '^ALLREDUCE ok sum=15 expected=15$' "$log"
mh_log "job took $(( $(mh_now_ms) - start )) ms from pod start to master exit"
mh_assert_no_grep "a healthy job has no failure summary" 'rank failure' "$log"
for w in cpu-worker-0 cpu-worker-1; do
  mh_assert_grep "$w served the job over ssh" 'Accepted publickey for root' "$(mh_podlog $w)"
done
for p in cpu-master-0 cpu-worker-0 cpu-worker-1; do
  # The readiness probe exchanges SSH identification strings and sshd's log relay leaves out
  # its bare preauth close: a healthy start logs nothing of it.
  mh_assert_no_grep "$p's log of a healthy start has no line of the readiness probe" \
    'kex_exchange_identification|ssh_dispatch_run_fatal|Connection reset|Connection closed by' "$(mh_podlog $p)"
done
