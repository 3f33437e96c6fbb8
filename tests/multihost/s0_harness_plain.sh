#!/bin/bash
# The harness alone, no gj-mpirun: plain sshd on the workers and the hand-written mpiexec a
# user would write on the master (plain_pod.sh). Proves the cluster works (namespaces, names,
# keys, Open MPI over ssh between hosts) independently of the agent.
source "$(dirname "$0")/scenario.sh"
probe=$(realpath -e "${1:-}") || mh_die "usage: s0_harness_plain.sh <mh_probe>"
MH_KEEP_PATHS=$(dirname "$probe")
mh_require
mh_up plain 2
mh_pod_start plain-worker-0 -- "$MH_DIR/plain_pod.sh" sshd
mh_pod_start plain-worker-1 -- "$MH_DIR/plain_pod.sh" sshd
for w in plain-worker-0 plain-worker-1; do
  mh_wait_for_log "$(mh_podlog $w)" 'Server listening on 0.0.0.0' 20 || mh_die "$w: sshd did not start"
done
mh_pod_start plain-master-0 -- "$MH_DIR/plain_pod.sh" mpiexec \
  plain-master-0.plain:1,plain-worker-0.plain:2,plain-worker-1.plain:2 5 "$probe" --env GJ_MH_UNSET
mh_pod_wait plain-master-0 45
log=$(mh_podlog plain-master-0)
mh_assert_eq "hand-written mpiexec exit code" 0 "$MH_RC"
mh_assert_ranks "$log" 5 plain-master-0:1,plain-worker-0:2,plain-worker-1:2
mh_assert_grep "allreduce over 5 ranks" '^ALLREDUCE ok sum=15 expected=15$' "$log"
