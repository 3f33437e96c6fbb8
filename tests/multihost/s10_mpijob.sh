#!/bin/bash
# Scenario 10: a Kubeflow MPIJob (mpi-operator v2beta1) emulated: pods mpj-launcher and
# mpj-worker-0/1, no GJ_TRAINING_* at all, only what the operator sets (K_MPI_JOB_ROLE, the
# flavour's hostfile variable, Open MPI's keep-FQDN and rsh args), the hostfile read-only at
# /etc/mpi/hostfile with <pod>.<job>.<ns>.svc names that resolve, and gj-mpirun as every pod's
# command with nothing else. Third argument: openmpi (slots=N lines, the launcher runs a rank
# too: runLauncherAsWorker) or mpich (host:N lines, workers only).
source "$(dirname "$0")/scenario.sh"
mh_scenario_init "$1" "$2"
flavour=${3:?flavour: openmpi or mpich}
mh_flavour "$flavour"  # skips without mpiexec.mpich; an MPIJob sets no GJ_MPI, so MH_FLAVOUR_ENV is not used
job=mpj
svc=ns.svc
MH_FIRST_POD=$job-launcher MH_SVC_DOMAIN=$svc mh_up "$job" 2
MH_ETC_MPI="$MH_RUN/etc-mpi"
mkdir -p "$MH_ETC_MPI"
if [ "$flavour" = mpich ]; then
  printf '%s\n' "# written by mpi-operator" "$job-worker-0.$job.$svc:2" "" "$job-worker-1.$job.$svc:2" >"$MH_ETC_MPI/hostfile"
  launcher_env=(HYDRA_HOST_FILE=/etc/mpi/hostfile HYDRA_LAUNCH_EXTRA_ARGS="-o ConnectionAttempts=10")
  args=(--mpiexec mpiexec.mpich)
  pod_env=("${MH_MPICH_POD_ENV[@]}")  # Debian's alternatives name; an MPICH image's mpiexec is MPICH's
  np=4 placement=$job-worker-0:2,$job-worker-1:2
else
  printf '%s\n' "$job-launcher.$job.$svc slots=1" "$job-worker-0.$job.$svc slots=2" "$job-worker-1.$job.$svc slots=2" \
    >"$MH_ETC_MPI/hostfile"
  launcher_env=(OMPI_MCA_orte_keep_fqdn_hostnames=true OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile
    OMPI_MCA_plm_rsh_args="-o ConnectionAttempts=10")
  args=() pod_env=()
  np=5 placement=$job-launcher:1,$job-worker-0:2,$job-worker-1:2
fi
chmod 0444 "$MH_ETC_MPI/hostfile"
pod_env+=(GJ_PREFLIGHT="${MH_PREFLIGHT:-off}")  # as mh_platform_env: only s18_preflight.sh tests the checks
for w in "$job-worker-0" "$job-worker-1"; do mh_pod_start "$w" K_MPI_JOB_ROLE=worker "${pod_env[@]}" -- "$MH_GJ" "$MH_PROG"; done
mh_pod_start "$job-launcher" K_MPI_JOB_ROLE=launcher "${pod_env[@]}" "${launcher_env[@]}" -- "$MH_GJ" "${args[@]}" "$MH_PROG"
mh_pod_wait "$job-launcher" 45
log=$(mh_rank_lines "$(mh_podlog "$job-launcher")")
mh_assert_eq "launcher exit code ($flavour)" 0 "$MH_RC"
mh_assert_grep "the launcher planned from the hostfile" "MPI_NP=$np \\(hosts and slots from the MPIJob hostfile" "$log"
mh_assert_ranks "$log" "$np" "$placement"
mh_assert_grep "allreduce over $np ranks" "^ALLREDUCE ok sum=$((np * (np + 1) / 2)) expected=" "$log"
