#!/bin/bash
# Scenario 20: a stop across pods (docs/agent.md "Restarts and stops"). gj.torch training
# (examples/python/torch_resume.py, the program argument) on 3 pods, one rank each, rank 1
# slower, under GJ_MAX_RESTARTS=1: SIGTERM to the master pod's PID 1 (the kubelet deleting the
# job). Every rank must report the same stop step, rank 0's checkpoint must hold it, the master
# must end 0 within GJ_STOP_GRACE (20 s) and not restart the job, and no rank may stay behind.
source "$(dirname "$0")/scenario.sh"
mh_scenario_init "$1" "$2"
build=$(cd "$(dirname "$MH_GJ")/.." && pwd)
ckdir="$build/tests/multihost/stop_ckpt.$$"
rm -rf "$ckdir" && mkdir -p "$ckdir" || mh_die "cannot make $ckdir"
trap 'rm -rf "$ckdir"; mh_down' EXIT
mh_up stop 2
trap 'rm -rf "$ckdir"; mh_down' EXIT
master=stop-master-0
mh_agent_job 1 0 1 0 GJ_PYTHON=/usr/bin/python3 PYTHONPATH="$build/collectives/python" GJ_MAX_RESTARTS=1 \
  GJ_STOP_GRACE=20 -- "$MH_PROG" --checkpoint "$ckdir/model.pt" --steps 100000 --every 1000000 \
  --step-seconds 0.01 --slow-rank 1
log=$(mh_podlog "$master")
for r in 0 1 2; do
  mh_wait_for_log "$log" "rank $r attempt 0 starts at step 0" 60 || mh_die "rank $r never started"
done
sleep 2
pid1=$(mh_pod_init_pid "$master")
[ -n "$pid1" ] || mh_die "cannot find the master pod's PID 1"
mh_log "sending SIGTERM to the master pod's PID 1 (host pid $pid1)"
start=$(mh_now_ms)
kill -TERM "$pid1"
mh_pod_wait "$master" 40
elapsed=$(( $(mh_now_ms) - start ))
[ "$MH_RC" != timeout ] || mh_die "the master still runs 40 s after SIGTERM"
mh_log "master ended $elapsed ms after SIGTERM with exit code $MH_RC"
mh_assert_eq "master exit code after a clean stop" 0 "$MH_RC"
[ "$elapsed" -lt 20000 ] || mh_die "the job ended $elapsed ms after SIGTERM, past GJ_STOP_GRACE=20"
lines=$(mh_rank_lines "$log")
steps=$(grep -oE "rank [0-2] STOP at step [0-9]+" "$log" | sort -u)
mh_log "stop steps: $(echo "$steps" | tr '\n' ';')"
mh_assert_eq "ranks that reported a stop" 3 "$(echo "$steps" | grep -c STOP)"
mh_assert_eq "distinct stop steps" 1 "$(echo "$steps" | awk '{print $NF}' | sort -u | wc -l)"
step=$(echo "$steps" | awk 'NR==1 {print $NF}')
saved=$(/usr/bin/python3 -c 'import sys, torch; print(torch.load(sys.argv[1])["step"])' "$ckdir/model.pt")
mh_assert_eq "the step rank 0's checkpoint holds" "$step" "$saved"
mh_assert_no_grep "no restart after a stop" "starting attempt 2" "$log"
mh_assert_no_ranks_left 15
