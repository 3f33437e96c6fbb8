#!/bin/bash
# Scenario 8: a Python training script launched by path (gj-mpirun runs .py files under
# python3; arguments pass through). With Debian's python3-mpi4py installed the script also
# checks an allreduce; without it, ranks come from OMPI_COMM_WORLD_RANK. The master's gate
# runs with GJ_SSH_CHECK=1 here, so its real ssh login check is exercised too.
source "$(dirname "$0")/scenario.sh"
mh_scenario_init "$@"
mh_up py 2
master=py-master-0
log=$(mh_podlog "$master")
# GJ_SSH_CHECK=1: the readiness gate also logs in over ssh (against these real sshds).
mh_agent_job 1 0 1 0 GJ_SSH_CHECK=1 -- "$MH_PROG" alpha "two words"
mh_pod_wait "$master" 45
mh_assert_eq "master exit code" 0 "$MH_RC"
mpi4py=no
/usr/bin/python3 -c 'import mpi4py' 2>/dev/null && mpi4py=yes
r=0
for host in py-master-0 py-worker-0 py-worker-1; do
  mh_assert_grep "python rank $r on $host (mpi4py=$mpi4py), arguments intact" \
    "^PYRANK $r/3 host=$host mpi4py=$mpi4py args=alpha,two words\$" "$log"
  r=$((r + 1))
done
if [ "$mpi4py" = yes ]; then
  mh_assert_grep "mpi4py allreduce over 3 ranks" '^PYALLREDUCE ok sum=6 expected=6$' "$log"
else
  mh_log "python3-mpi4py not installed: allreduce part not checked"
fi
for w in py-worker-0 py-worker-1; do
  logins=$(grep -c 'Accepted publickey for root' "$(mh_podlog $w)")
  [ "$logins" -ge 2 ] || mh_die "$w: $logins ssh login(s); expected the gate's check and mpiexec's"
done
mh_log "ok: each worker saw the gate's ssh login check and mpiexec's login"
