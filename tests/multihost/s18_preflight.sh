#!/bin/bash
# Scenario 18: the pre-flight checks between the readiness gate and mpiexec (docs/agent.md,
# "Pre-flight checks"), on 4 pods (master + 3 workers):
#   a) GPUs: every pod has a GPU limit of 8 and a fake driver proc tree (GJ_GPU_ROOT, the GPU
#      probe's seam) with 8 devices, but worker 1's shows 7: the job ends with exit 8 before
#      mpiexec, naming that pod, the count and the devices it sees; no other pod is named.
#   b) even links (a CPU job): the network check measures 12 links and warns about none; the
#      job runs.
#   c) worker 2's link shaped with tc (tbf at 200 Mbit/s, both directions of its veth): the check names that
#      pod with its bandwidth and round trip, and no other pod or link; the job still runs
#      (a warning by default).
#   d) NCCL's transport (a GPU job, one GPU per pod): every pod's fake tree has an RDMA device
#      (sys/class/infiniband/mlx5_0) and each rank, standing in for NCCL 2.x, writes NCCL's
#      INIT/NET lines for TCP sockets into the NCCL_DEBUG_FILE gj set: the master's line says
#      Socket on 4 pods, and its warning names the pods, their RDMA device and NCCL_IB_HCA.
# The cluster's pods have no GPU driver, so the GPU probe reads only the fake trees.
source "$(dirname "$0")/scenario.sh"
mh_scenario_init "$@"
mh_up pf 3
master=pf-master-0
log=$(mh_podlog "$master")

# Fake driver trees: <root>/proc/driver/nvidia/gpus/<bus id>/information, as the driver writes it.
fake_gpus() {  # <root> <count>
  local i d
  for ((i = 0; i < $2; i++)); do
    d="$1/proc/driver/nvidia/gpus/0000:$(printf '%02x' $((16 + i))):00.0"
    mkdir -p "$d"
    printf 'Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 0\nGPU UUID: \t GPU-00000000-0000-0000-0000-00000000000%d\nBus Location: \t 0000:%02x:00.0\n' \
      "$i" $((16 + i)) >"$d/information"
  done
}
fake_gpus "$MH_RUN/gpu8" 8
fake_gpus "$MH_RUN/gpu7" 7
fake_gpus "$MH_RUN/gpu1ib" 1
mkdir -p "$MH_RUN/gpu1ib/sys/class/infiniband/mlx5_0"
# d)'s rank program: NCCL's lines for TCP sockets (as NCCL 2.x writes them when it finds no usable
# IB device) into the file gj named, then the probe.
mkdir -p "$MH_RUN/ncclbin"
cat >"$MH_RUN/ncclbin/nccl_sockets.sh" <<EOF
#!/bin/sh
p="\$(hostname):\$\$:\$\$ [0] NCCL INFO "
[ -n "\$NCCL_DEBUG_FILE" ] && printf '%sNET/IB : No device found.\n%sNET/Socket : Using [0]eth0:10.0.0.1<0>\n%sUsing network Socket\n%sNCCL version 2.18.5+cuda12.2\n' "\$p" "\$p" "\$p" "\$p" >"\$NCCL_DEBUG_FILE"
exec "$MH_PROG"
EOF
chmod 755 "$MH_RUN/ncclbin/nccl_sockets.sh"
MH_KEEP_PATHS+=":$MH_RUN/gpu8:$MH_RUN/gpu7:$MH_RUN/gpu1ib:$MH_RUN/ncclbin"

restart_workers() {
  local w
  for w in pf-worker-0 pf-worker-1 pf-worker-2; do mh_pod_kill "$w"; mh_pod_wait "$w" 10; done
}

# a) 7 of 8 GPUs on worker 1
for pod in "${MH_PODS[@]}"; do
  root=$MH_RUN/gpu8
  [ "$pod" = pf-worker-1 ] && root=$MH_RUN/gpu7
  mh_agent_pod "$pod" 1 8 1 8 GJ_PREFLIGHT=on GJ_GPU_ROOT="$root" -- "$MH_PROG"
done
mh_pod_wait "$master" 60
mh_assert_eq "master exit code with a pod short of one GPU (exit 8: pre-flight check failed)" 8 "$MH_RC"
mh_assert_grep "the pod, its count and its limit are named" \
  'pod pf-worker-1\.pf sees 7 GPU\(s\) but GJ_TRAINING_WORKER_GPU_LIMIT=8' "$log"
mh_assert_grep "the devices it does see are listed" 'pf-worker-1\.pf sees 7 .*6 GPU-00000000-0000-0000-0000-000000000006 0000:16:00\.0' "$log"
mh_assert_no_grep "no other pod is named" 'pod pf-(master-0|worker-0|worker-2)\.pf sees' "$log"
mh_assert_no_grep "mpiexec never started" '(running: |^RANK )' "$log"
grep -E 'GPU|all 4 host' "$log" >&2
mv "$log" "$log.a"

# b) even links, CPU job: 12 links measured, no warning
restart_workers
mh_agent_job 1 0 1 0 GJ_PREFLIGHT=on -- "$MH_PROG"
mh_pod_wait "$master" 60
mh_assert_eq "master exit code with even links" 0 "$MH_RC"
mh_assert_grep "the network check measured every pod's 3 links" 'network check: 12 link\(s\) between 4 pod\(s\)' "$log"
mh_assert_no_grep "even links: no pod or link named" '(far below|not measured|probe failed)' "$log"
mh_assert_grep "the job ran after the checks" '^ALLREDUCE ok sum=10 expected=10$' "$log"
grep -E 'network check|all 4 host' "$log" >&2
mv "$log" "$log.b"

# c) worker 2 shaped to 200 Mbit/s both ways (a few GB/s between the others) (veth v3 on the bridge side, eth0 in the pod)
restart_workers
shaped=pf-worker-2
if ! ip -n "$MH_PREFIX-br" link show v3 >/dev/null 2>&1; then mh_die "test bug: no veth v3 for $shaped"; fi
if ! { tc -n "$MH_PREFIX-br" qdisc add dev v3 root tbf rate 200mbit burst 32kbit latency 400ms &&
       tc -n "${MH_NS[$shaped]}" qdisc add dev eth0 root tbf rate 200mbit burst 32kbit latency 400ms; }; then
  [ "${CI:-}" = true ] && mh_die "tc tbf failed (sch_tbf missing?) under CI"
  mh_log "SKIP: tc tbf failed here (sch_tbf missing?); parts a and b passed"
  exit "$MH_SKIP"
fi
mh_agent_job 1 0 1 0 GJ_PREFLIGHT=on -- "$MH_PROG"
mh_pod_wait "$master" 60
mh_assert_eq "master exit code with one slow pod (a warning by default)" 0 "$MH_RC"
mh_assert_grep "the slow pod is named with its bandwidth and round trip" \
  'network check: pod pf-worker-2\.pf is far below the job.s median on all its links: [0-9.]+ [kMG]B/s \(median [0-9.]+ [kMG]B/s\), round trip [0-9.]+ ms' "$log"
mh_assert_one_line "only that pod is named" 'far below' "$log"
mh_assert_grep "the job ran after the warning" '^ALLREDUCE ok sum=10 expected=10$' "$log"
grep -E 'network check|all 4 host' "$log" >&2
mv "$log" "$log.c"

# d) NCCL on TCP sockets while every pod has an RDMA device (c's shaping undone first)
restart_workers
tc -n "$MH_PREFIX-br" qdisc del dev v3 root 2>/dev/null || true
tc -n "${MH_NS[$shaped]}" qdisc del dev eth0 root 2>/dev/null || true
mh_agent_job 1 1 1 1 GJ_PREFLIGHT=on GJ_GPU_ROOT="$MH_RUN/gpu1ib" -- "$MH_RUN/ncclbin/nccl_sockets.sh"
mh_pod_wait "$master" 60
mh_assert_eq "master exit code of the GPU job on sockets (a warning)" 0 "$MH_RC"
mh_assert_grep "the master's transport line from the ranks' NCCL files" \
  'NCCL transport: Socket \(eth0:10\.0\.0\.1<0>\) on 4 pod\(s\), NCCL 2\.18\.5\+cuda12\.2' "$log"
mh_assert_grep "the warning names the pods, their RDMA device and the setting to look at" \
  'TCP sockets between the pods although pf-master-0\.pf, pf-worker-0\.pf, pf-worker-1\.pf, pf-worker-2\.pf have RDMA devices \(/sys/class/infiniband: mlx5_0\).*NCCL_IB_HCA' "$log"
grep -E 'NCCL|all 4 host' "$log" >&2
