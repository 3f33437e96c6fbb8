#!/bin/bash
# Scenario 13: the library's hierarchical host path across pods. The platform's CPU case
# (master CPU limit 1, workers 2: ranks 0 | 1 2 | 3 4) runs gj_coll_hierarchical_check, which
# runs every collective x dtype x op on a communicator with the two-level path and on one with
# GJ_COLL_HIERARCHICAL=0, and compares them bitwise (and with the expected values). Each
# communicator's info line must say which host path it took.
# Third argument: consecutive (default: ranks fill the pods in order) or round-robin (ranks
# dealt over the pods, --rank-by node: 0 2 4 are not neighbours, so the cross-node steps work
# in node order and put results back in rank order).
source "$(dirname "$0")/scenario.sh"
mh_scenario_init "$1" "$2"
placement=${3:-consecutive}
mpi_args=(--mpi-arg=--bind-to --mpi-arg=none)  # co-located pods would share pinned cores
case "$placement" in
  consecutive) hosts="hier-master-0 hier-worker-0 hier-worker-0 hier-worker-1 hier-worker-1" ;;
  round-robin) hosts="hier-master-0 hier-worker-0 hier-worker-1 hier-worker-0 hier-worker-1"
               mpi_args+=(--mpi-arg=--rank-by --mpi-arg=node) ;;
  *) mh_die "placement '$placement': use consecutive or round-robin" ;;
esac
mh_up hier 2
mh_agent_job 1 0 2 0 -- "${mpi_args[@]}" "$MH_PROG"
mh_pod_wait hier-master-0 280
log=$(mh_podlog hier-master-0)
mh_assert_eq "master pod exit code" 0 "$MH_RC"
mh_assert_grep "the default communicator is hierarchical over 3 nodes of 1-2 ranks" \
  'host buffers: hierarchical: 3 nodes of 1-2 ranks' "$log"
mh_assert_grep "GJ_COLL_HIERARCHICAL=0 turns it off" 'hierarchical host path off \(GJ_COLL_HIERARCHICAL=0' "$log"
mh_assert_grep "hierarchical results equal the flat path's" '^PASSED hierarchical == flat: [0-9]+ cases on 5 ranks$' "$log"
mh_assert_grep "ranks placed $placement" "^HOSTS $hosts\$" "$log"
