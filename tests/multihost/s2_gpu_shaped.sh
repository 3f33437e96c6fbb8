#!/bin/bash
# Scenario 2: GPU-shaped jobs (the programs run on CPU). GPU limits decide the slots, CPU
# limits are ignored; the host list and np follow the platform's GPU rules:
#   a) master and workers with 2 GPUs each (CPU limits 8): hosts all three with 2 slots, np 6
#   b) CPU master + workers with 1 GPU: the master runs mpiexec but hosts no rank, np 2
source "$(dirname "$0")/scenario.sh"
mh_scenario_init "$@"
mh_up gpu 2
master=gpu-master-0

# a) both roles use GPUs
mh_agent_pod "$master" 8 2 8 2 -- --dry-run "$MH_PROG"
mh_pod_wait "$master" 20
log=$(mh_podlog "$master")
mh_assert_eq "dry run exit code (GPU master + GPU workers)" 0 "$MH_RC"
mh_assert_grep "dry run host list follows the GPU limits" \
  '^MPI_HOSTS=gpu-master-0\.gpu:2,gpu-worker-0\.gpu:2,gpu-worker-1\.gpu:2$' "$log"
mh_assert_grep "dry run np = 3 hosts x 2 GPUs" '^MPI_NP=6$' "$log"
mv "$log" "$log.dry-a"
mh_agent_job 8 2 8 2 -- "$MH_PROG"
mh_pod_wait "$master" 45
mh_assert_eq "master exit code (GPU master + GPU workers)" 0 "$MH_RC"
mh_assert_ranks "$log" 6 gpu-master-0:2,gpu-worker-0:2,gpu-worker-1:2
mh_assert_grep "allreduce over 6 ranks" '^ALLREDUCE ok sum=21 expected=21$' "$log"
mv "$log" "$log.run-a"

# b) CPU master, GPU workers: ranks only on the workers. The workers restart with the
# job's new parameters, as a resubmitted job's pods would.
for w in gpu-worker-0 gpu-worker-1; do mh_pod_kill "$w"; mh_pod_wait "$w" 10; done
mh_agent_pod "$master" 4 0 4 1 -- --dry-run "$MH_PROG"
mh_pod_wait "$master" 20
mh_assert_eq "dry run exit code (CPU master + GPU workers)" 0 "$MH_RC"
mh_assert_grep "dry run host list has only the workers" '^MPI_HOSTS=gpu-worker-0\.gpu:1,gpu-worker-1\.gpu:1$' "$log"
mh_assert_grep "dry run np = 2 workers x 1 GPU" '^MPI_NP=2$' "$log"
mv "$log" "$log.dry-b"
mh_agent_job 4 0 4 1 -- "$MH_PROG"
mh_pod_wait "$master" 45
mh_assert_eq "master exit code (CPU master + GPU workers)" 0 "$MH_RC"
mh_assert_ranks "$log" 2 gpu-worker-0:1,gpu-worker-1:1
mh_assert_grep "allreduce over 2 ranks" '^ALLREDUCE ok sum=3 expected=3$' "$log"
