#!/bin/bash
# ctest fixtures around the multi-host tests (see CMakeLists.txt).
#   fixture.sh setup          can namespaces be made? (77 = skip with reason; CI=true: fail); sweep
#   fixture.sh cleanup        sweep leftovers of dead runs; fail if any remain
#   fixture.sh agent-missing  the gj-mpirun target is not in this build (77; CI=true: fail)
source "$(dirname "$0")/cluster.sh"
set -uo pipefail
case "${1:-}" in
  setup)
    mh_require
    mh_sweep
    echo "multihost: namespaces can be made; leftovers swept"
    ;;
  cleanup)
    mh_sweep
    left=$(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^gjmh[0-9]+r[0-9]+-' || true)
    for ns in $left; do
      owner=${ns#gjmh}; owner=${owner%%r*}
      mh_owner_alive "$owner" || mh_die "namespace $ns of dead run $owner could not be removed"
    done
    echo "multihost: no leftovers of finished runs"
    ;;
  agent-missing)
    msg="the gj-mpirun target is not part of this build, so the multi-host scenarios cannot run"
    if [ "${CI:-}" = "true" ]; then mh_log "FAIL (CI=true): $msg"; exit 1; fi
    mh_log "SKIP: $msg"; exit "$MH_SKIP"
    ;;
  *) echo "usage: fixture.sh setup | cleanup | agent-missing" >&2; exit 2 ;;
esac
