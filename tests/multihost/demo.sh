#!/bin/bash
# A real 3-pod demo job through gj-mpirun (the README's quick start): demo-master-0 (1 slot)
# + demo-worker-0/1 (2 slots each), every pod running `gj-mpirun <program> [args]` with the
# platform's environment; prints every pod's log and exits with the master pod's exit code.
# Usage: demo.sh <build-dir> [program [args...]]    (program defaults to the built mh_probe)
source "$(dirname "$0")/scenario.sh"
build=${1:-}
[ -d "$build" ] || mh_die "usage: cluster.sh demo <build-dir> [program [args...]] (build dir '$build' not found)"
shift
gj=$build/agent/gj-mpirun
[ -x "$gj" ] || gj=$(find "$build" -type f -name gj-mpirun -perm -u+x | head -n1)
[ -n "$gj" ] || mh_die "no gj-mpirun in $build; build it first (cmake --build $build)"
probe=$build/tests/multihost/mh_probe
[ -x "$probe" ] || probe=$(find "$build" -type f -name mh_probe -perm -u+x | head -n1)
prog=${1:-$probe}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || [ "$(basename "$prog")" != mh_probe ] || set -- --env GJ_TRAINING_POD_NAME
mh_scenario_init "$gj" "$prog"
mh_up demo 2
mh_agent_job 1 0 2 0 -- "$MH_PROG" "$@"
mh_pod_wait demo-master-0 120
rc=$MH_RC
for pod in "${MH_PODS[@]}"; do
  echo "===== $pod ($([ "$pod" = demo-master-0 ] && echo "exit code $rc" || echo running)) ====="
  cat "$(mh_podlog "$pod")"
done
[ "$rc" = timeout ] && mh_die "the demo job did not finish within 120 s"
exit "$rc"
