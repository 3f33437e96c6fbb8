#!/bin/bash
# Scenario 4: a worker that never comes. worker-1's name resolves but its pod never starts
# (nothing listens). With GJ_READY_TIMEOUT=4 the master must give up within the deadline
# (plus a margin), exit 5 ("workers not reachable"), name that host, and start no rank.
source "$(dirname "$0")/scenario.sh"
mh_scenario_init "$@"
mh_up never 2
master=never-master-0
log=$(mh_podlog "$master")
mh_agent_pod never-worker-0 1 0 1 0 -- "$MH_PROG"
start=$(mh_now_ms)
mh_agent_pod "$master" 1 0 1 0 GJ_READY_TIMEOUT=4 -- "$MH_PROG"
mh_pod_wait "$master" 30
elapsed=$(( $(mh_now_ms) - start ))
mh_assert_eq "master exit code (workers not reachable)" 5 "$MH_RC"
[ "$elapsed" -ge 3500 ] || mh_die "master gave up after $elapsed ms, before the 4 s deadline"
[ "$elapsed" -le 10000 ] || mh_die "master gave up after $elapsed ms; the deadline was 4 s"
mh_log "ok: gave up after $elapsed ms (deadline 4000 ms)"
err=$(grep -iE 'not reachable' "$log" | tail -n1)
[ -n "$err" ] || mh_die "no 'not reachable' error line in the master's log"
grep -qE 'never-worker-1\.never.*refused' <<<"$err" || mh_die "error does not name never-worker-1.never and why: $err"
if grep -q 'never-worker-0\.never' <<<"$err"; then mh_die "error lists never-worker-0.never, which was ready: $err"; fi
mh_log "ok: the error names only the missing host, with its reason"
mh_assert_no_grep "no rank started" '^RANK ' "$log"
