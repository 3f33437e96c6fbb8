#!/usr/bin/env bash
# Quick start: build gj-mpirun and the C++ data-parallel training example, then run a real job
# through gj-mpirun:
#   1. the master pod with no workers, 2 local slots, real Open MPI (any machine);
#   2. the same pod running our users' PyTorch + Horovod script with only its import changed
#      to gj.torch (examples/python/horovod_seed.py, CPU, a small dataset);
#   2b. when the TF environment exists (/opt/gj-venvs/tf, scripts/install-deps.sh --tf): the users'
#      TensorFlow + Horovod script with only its import changed to gj.tensorflow
#      (examples/python/horovod_seed_tf.py), on Keras 3 and on Keras 2 (TF_USE_LEGACY_KERAS=1);
#   3. when run as root: a 3-pod cluster (master + 2 workers, each in its own network, UTS,
#      PID and mount namespaces, real sshd on the workers), the same program on 5 ranks.
# Usage: scripts/demo.sh            (GJ_BUILD_DIR selects the build dir, default build/)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
build=${GJ_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
# What the demo runs, plus what `cmake --install "$build"` installs (the collectives libraries,
# shared and static), so that installing from this build works afterwards.
cmake --build "$build" -j"$(nproc)" --target gj-mpirun train mh_probe gj_python gj_collectives gj_collectives_static

train=$(pwd)/$build/examples/cpp-train/train
echo
echo "== 1. master-only job: 2 ranks on this machine through gj-mpirun =="
# The platform's environment for a master pod with no workers (what Volcano writes).
env GJ_TRAINING_ROLE=master GJ_TRAINING_VC_JOB_NAME=demo GJ_TRAINING_POD_NAME=demo-master-0 \
    GJ_TRAINING_MASTER_CPU_LIMIT=2 GJ_TRAINING_MASTER_GPU_LIMIT=0 GJ_TRAINING_MASTER_REPLICAS=1 \
    GJ_TRAINING_WORKER_CPU_LIMIT=0 GJ_TRAINING_WORKER_GPU_LIMIT=0 GJ_TRAINING_WORKER_REPLICAS=0 \
    MPI_HOST= \
    "$build/agent/gj-mpirun" --master-host localhost --no-sshd "$train" --steps 200

echo
echo "== 2. the users' PyTorch + Horovod script on gj.torch: 2 ranks through gj-mpirun =="
output=$(mktemp -d)
env GJ_TRAINING_ROLE=master GJ_TRAINING_VC_JOB_NAME=demo GJ_TRAINING_POD_NAME=demo-master-0 \
    GJ_TRAINING_MASTER_CPU_LIMIT=2 GJ_TRAINING_MASTER_GPU_LIMIT=0 GJ_TRAINING_MASTER_REPLICAS=1 \
    GJ_TRAINING_WORKER_CPU_LIMIT=0 GJ_TRAINING_WORKER_GPU_LIMIT=0 GJ_TRAINING_WORKER_REPLICAS=0 \
    MPI_HOST= PYTHONPATH="$(pwd)/$build/collectives/python" \
    GJ_SEED_SAMPLES=2000 GJ_SEED_EPOCHS=2 GJ_SEED_OUTPUT="$output" \
    "$build/agent/gj-mpirun" --master-host localhost --no-sshd --python /usr/bin/python3 \
    "$(pwd)/examples/python/horovod_seed.py"
echo "model saved by rank 0: $output/model.pth"

tf_python=/opt/gj-venvs/tf/bin/python
if [ -x "$tf_python" ]; then
  for legacy in 0 1; do
    echo
    echo "== 2b. the users' TensorFlow + Horovod script on gj.tensorflow: 2 ranks, Keras $([ $legacy = 1 ] && echo 2 || echo 3) =="
    output=$(mktemp -d)
    env GJ_TRAINING_ROLE=master GJ_TRAINING_VC_JOB_NAME=demo GJ_TRAINING_POD_NAME=demo-master-0 \
        GJ_TRAINING_MASTER_CPU_LIMIT=2 GJ_TRAINING_MASTER_GPU_LIMIT=0 GJ_TRAINING_MASTER_REPLICAS=1 \
        GJ_TRAINING_WORKER_CPU_LIMIT=0 GJ_TRAINING_WORKER_GPU_LIMIT=0 GJ_TRAINING_WORKER_REPLICAS=0 \
        MPI_HOST= PYTHONPATH="$(pwd)/$build/collectives/python" TF_CPP_MIN_LOG_LEVEL=2 \
        TF_USE_LEGACY_KERAS=$legacy GJ_SEED_SAMPLES=4096 GJ_SEED_EPOCHS=2 GJ_SEED_OUTPUT="$output" \
        "$build/agent/gj-mpirun" --master-host localhost --no-sshd --python "$tf_python" \
        "$(pwd)/examples/python/horovod_seed_tf.py"
    echo "checkpoints and model saved by rank 0: $(ls "$output" | tr '\n' ' ')"
  done
else
  echo
  echo "== 2b. skipped: no TF environment at $tf_python (scripts/install-deps.sh --tf makes it) =="
fi

if [ "$(id -u)" -ne 0 ]; then
  echo
  echo "== 3. skipped: the 3-pod cluster needs root (network namespaces) =="
  exit 0
fi
echo
echo "== 3. 3-pod job: master + 2 workers in network namespaces, real sshd, 5 ranks =="
tests/multihost/cluster.sh demo "$build" "$train" --steps 200
