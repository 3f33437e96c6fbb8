#!/bin/bash
# Scenario 12: a rank's program fails. On a 3-pod job (1 slot each), rank 2 (on worker-1)
# fails after the first allreduce, without MPI_Finalize, while ranks 0 and 1 go on
# allreducing. Fourth argument: exit (default: it exits with 7) or kill (it dies of SIGKILL, as
# the OOM killer ends it). The master pod must exit 7, "a rank failed" (README "Exit codes"),
# within 5 s of the failure; its log must end with one failure summary naming rank 2, local rank
# 0, pod exit-worker-1 and its status (exit code 7, SIGKILL), and the ranks ended with it as
# collateral; the master's and worker-1's termination logs say so; no rank, orted or hydra proxy
# may stay behind on any pod. Third argument: openmpi (default), mpich or intel.
source "$(dirname "$0")/scenario.sh"
mh_scenario_init "$1" "$2"
mh_flavour "${3:-openmpi}"
fail_how=--fail
case "${4:-exit}" in
  exit) fail=7 status="exited with code 7" ;;
  kill) fail=-9 status="killed by SIGKILL" ;;
  # MPI_Abort(MPI_COMM_WORLD, 5): hydra (MPICH, Intel MPI) kills every rank's process tree, the
  # wrappers included; the summary must still name rank 2, the abort and its stderr line.
  # Open MPI's MPI_Abort exits with the errorcode, which the wrapper reports as such.
  abort) fail=5 fail_how=--abort status="called MPI_Abort (errorcode 5)"
         [ "$MH_FLAVOUR" = openmpi ] && status="exited with code 5" ;;
  *) mh_die "failure '$4': use exit, kill or abort" ;;
esac
status_re=${status//(/\\(}  # the status as a regex (the abort's has parentheses)
status_re=${status_re//)/\\)}
mh_up exit 2
master=exit-master-0
log=$(mh_podlog "$master")
# Each pod's termination log, where every pod sees it (the pods' /tmp is their own).
terms="$(dirname "$MH_PROG")/termination-logs.$$"
mkdir -p "$terms"
# mh_up's cleanup too, with the script's status: mh_down exits with the $? it finds (without
# the `(exit "$rc")`, rm's 0, and a failed assertion would pass).
trap 'rc=$?; rm -rf "$terms"; (exit "$rc"); mh_down' EXIT
for pod in "${MH_PODS[@]}"; do
  : >"$terms/$pod"
  mh_agent_pod "$pod" 1 0 1 0 "${MH_FLAVOUR_ENV[@]}" GJ_TERMINATION_LOG="$terms/$pod" \
    -- "$MH_PROG" --loop 120 "$fail_how" 2 "$fail"
done
# Not anchored: hydra can join two ranks' output on one line ("RANK 0/3 host=...FAIL 2 exit=7").
mh_wait_for_log "$log" "FAIL 2 exit=$([ "$fail_how" = --abort ] && echo abort || echo "$fail")" 45 ||
  mh_die "rank 2 never reached its failure"
start=$(mh_now_ms)
mh_expect_rank_failure "$master" "$start" 30 "rank 2 failed" 0 5000
mh_assert_one_line "one failure summary naming rank 2" \
  "rank failure: rank 2 (local rank 0, pod exit-worker-1) $status at " "$log"
mh_assert_grep "the summary lists the other ranks as collateral" \
  "collateral \(ended because of it\): rank [01] \(exit-(master|worker)-[0-9]" "$log"
mh_assert_grep "the master's termination log has the short form" \
  "^rank failure: rank 2 \(local rank 0, pod exit-worker-1\) $status_re" "$terms/$master"
if [ "$fail_how" = --abort ]; then
  mh_assert_grep "the summary has the aborting rank's own stderr line" \
    "\\| mh_probe: rank 2 calls MPI_Abort with errorcode 5" "$log"
  mh_assert_no_grep "a pod whose sshd answers is never called lost" "lost: every rank wrapper there" "$log"
fi
mh_assert_grep "worker-1's termination log names its failed rank" \
  "^rank failure: rank 2 \(local rank 0, pod exit-worker-1\) $status_re" "$terms/exit-worker-1"
mh_assert_no_ranks_left 15
