#!/bin/bash
# Intel MPI: the C++ training example (examples/cpp-train, built against Debian's MPICH, run on
# Intel MPI's libmpi.so.12) as a 3-pod job through gj-mpirun on the namespaced cluster: master 1
# slot, workers 2 each (np 5). gj-mpirun detects Intel MPI from `mpiexec --version` (Intel's bin
# first in every pod's PATH, no GJ_MPI), launches over ssh with -bootstrap ssh
# -bootstrap-exec-args; every rank ends with bitwise identical weights and the master pod exits 0.
# Arguments: <gj-mpirun> <train>
source "$(dirname "$0")/../multihost/scenario.sh"
mh_scenario_init "$1" "$2"
mh_flavour intel
mh_up itrain 2
master=itrain-master-0
mh_agent_job 1 0 2 0 "${MH_FLAVOUR_ENV[@]}" -- "$MH_PROG" --steps 30
mh_pod_wait "$master" 90 || mh_die "the job still runs after 90 s"
log=$(mh_podlog "$master")
mh_assert_eq "master exit code (intel)" 0 "$MH_RC"
mh_assert_grep "np 5, the flavour detected from Intel MPI's mpiexec --version" 'MPI_NP=5 \(master\+workers on CPU, intel\)' "$log"
mh_assert_grep "gj-mpirun launched Intel MPI's hydra over ssh" '-bootstrap ssh -bootstrap-exec-args' "$log"
mh_assert_one_line "identical weights on all 5 ranks" "OK: weights bitwise identical on all 5 ranks" "$log"
for w in itrain-worker-0 itrain-worker-1; do
  mh_assert_grep "$w served the job over ssh" 'Accepted publickey for root' "$(mh_podlog $w)"
done
mh_assert_no_ranks_left 15
