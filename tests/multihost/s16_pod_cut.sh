#!/bin/bash
# Scenario 16: a worker pod's network is cut mid-job (its eth0 down: the pod and its processes
# run on, nothing reaches the master). Its rank wrappers' pings stop; after 10 s of silence the
# master probes the pod's sshd, which does not answer, so the pod is lost: the job must end with
# exit 7, "a rank failed" (README "Exit codes"), and the summary must name rank 2, its pod, and
# how its connection ended ("went silent ... did not answer"), within 30 s (10 s of silence, the
# 1 s probe, the launcher's teardown: 3 s for mpiexec to end by itself, 1.5 s to SIGKILL, the
# monitor's 1.5 s drain; measured 16.8 s on the 2-vCPU VM beside a CI run). The scenario with late pings but a pod that answers is
# tests/sys/test_job_monitor.cpp's (a cut cannot be made partial here).
source "$(dirname "$0")/scenario.sh"
mh_scenario_init "$1" "$2"
mh_looping_job cut
master=cut-master-0
log=$(mh_podlog "$master")
mh_log "cutting cut-worker-1's network (eth0 down)"
start=$(mh_now_ms)
ip -n "${MH_NS[cut-worker-1]}" link set eth0 down || mh_die "ip link set eth0 down in cut-worker-1"
# Not before 10 s of silence; within 30 s.
mh_expect_rank_failure "$master" "$start" 45 "a worker pod's network was cut" 10000 30000
mh_assert_one_line "one failure summary naming the cut-off pod's rank and its silence" \
  "rank failure: rank 2 (local rank 0, pod cut-worker-1) lost: its rank wrapper's connection to the master went silent (no ping for 10 s, its pod's sshd at ${MH_ADDR[cut-worker-1]} did not answer)" "$log"
