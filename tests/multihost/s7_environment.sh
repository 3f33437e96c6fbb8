#!/bin/bash
# Scenario 7: the environment each rank sees.
#  - NCCL_IB_HCA is set differently in each pod (per-node RDMA settings): every rank must see
#    its own pod's value, not the master's.
#  - GJ_TRAINING_POD_NAME, written by the platform per pod, likewise.
#  - GJ_MH_FROM_MASTER is set only on the master and exported with --export: every rank sees it.
#  - GJ_MH_BY_FLAG is set by --export NAME=VALUE (hydra: -genv NAME VALUE) and overrides the value
#    worker-0's pod has: every rank sees the flag's value.
#  - GJ_MH_API_TOKEN is exported too; its value must never appear in the master's log.
#  Third argument: openmpi (default), mpich or intel (hydra; with -genvnone so per-pod values win).
source "$(dirname "$0")/scenario.sh"
mh_scenario_init "$1" "$2"
flavour=${3:-openmpi}
flavour_env=() pod_env=()
mh_flavour "$flavour"
case "$flavour" in
  mpich) flavour_env=(GJ_MPI=mpich GJ_MPIEXEC=mpiexec.mpich) pod_env=("${MH_MPICH_POD_ENV[@]}") ;;
  intel) pod_env=("${MH_FLAVOUR_ENV[@]}") ;;  # the image's PATH/LD_LIBRARY_PATH: every pod has them
esac
mh_up env 2
master=env-master-0
log=$(mh_podlog "$master")
secret=s3cr3t-$RANDOM
probe_args=(--env NCCL_IB_HCA --env GJ_TRAINING_POD_NAME --env GJ_MH_FROM_MASTER --env GJ_MH_ONLY_ON_WORKER --env GJ_MH_BY_FLAG)
common=(--export GJ_MH_FROM_MASTER --export GJ_MH_API_TOKEN --export GJ_MH_BY_FLAG=flag-value -- "$MH_PROG" "${probe_args[@]}")
mh_agent_pod env-worker-0 1 0 2 0 "${pod_env[@]}" NCCL_IB_HCA=mlx5_0 GJ_MH_ONLY_ON_WORKER=w0 GJ_MH_BY_FLAG=pod-value -- "${common[@]}"
# env-worker-1 is in a namespace with 160 Services: 1120 service-link variables, over sshd's
# 1000-variable limit for a session. The job must start; the worker names what it left out.
links=()
for ((i = 0; i < 160; i++)); do
  for suffix in _SERVICE_HOST _SERVICE_PORT _SERVICE_PORT_HTTP _PORT _PORT_80_TCP _PORT_80_TCP_PROTO _PORT_80_TCP_ADDR; do
    links+=("SVC${i}$suffix=10.96.0.$((i % 250))")
  done
done
mh_agent_pod env-worker-1 1 0 2 0 "${pod_env[@]}" "${links[@]}" NCCL_IB_HCA=mlx5_1 -- "${common[@]}"
mh_agent_pod "$master" 1 0 2 0 "${pod_env[@]}" "${flavour_env[@]}" NCCL_IB_HCA=mlx5_m GJ_MH_FROM_MASTER=hello-ranks GJ_MH_API_TOKEN="$secret" -- "${common[@]}"
mh_pod_wait "$master" 45
log=$(mh_rank_lines "$log")
mh_assert_eq "master exit code ($flavour)" 0 "$MH_RC"
mh_assert_ranks "$log" 5 env-master-0:1,env-worker-0:2,env-worker-1:2
expect_rank() {  # <rank> <pod> <hca> <only-on-worker>
  local want="^RANK $1/5 host=$2 NCCL_IB_HCA=$3 GJ_TRAINING_POD_NAME=$2 GJ_MH_FROM_MASTER=hello-ranks GJ_MH_ONLY_ON_WORKER=$4 GJ_MH_BY_FLAG=flag-value\$"
  grep -qE -- "$want" "$log" || mh_die "rank $1 on $2: expected NCCL_IB_HCA=$3, own pod name, the exported variable and GJ_MH_ONLY_ON_WORKER=$4; got: $(grep -E "^RANK $1/" "$log")"
}
expect_rank 0 env-master-0 mlx5_m '<unset>'
expect_rank 1 env-worker-0 mlx5_0 w0
expect_rank 2 env-worker-0 mlx5_0 w0
expect_rank 3 env-worker-1 mlx5_1 '<unset>'
expect_rank 4 env-worker-1 mlx5_1 '<unset>'
mh_log "ok: per-pod values on each pod's ranks; the exported variable on every rank"
mh_assert_grep "env-worker-1 names the service links it did not pass (sshd's limit)" \
  'not passing SVC0_SERVICE_HOST to ranks: Kubernetes service link \(the pod has [0-9]+ variables; sshd allows 1000' \
  "$(mh_podlog env-worker-1)"
mh_assert_no_grep "the exported secret's value is not printed" "$secret" "$log"
