#!/usr/bin/env python3
"""Runs the seed's TensorFlow script (examples/python/horovod_seed_tf.py) unchanged in this
process, then checks on every rank: the loss fell from the first epoch to the last, the model's
weights are bitwise identical across ranks, and rank 0 (only) wrote the checkpoints and the
model into $GJ_SEED_OUTPUT.

    gj-mpirun seed_check.py ../../../examples/python/horovod_seed_tf.py
Exit 0 ok, 1 weights differ across ranks, 3 the loss did not fall, 4 files missing.
"""

import glob
import hashlib
import os
import runpy
import shutil
import sys


def main(script):
    output = os.environ["GJ_SEED_OUTPUT"]
    if os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0")) == "0":
        # Only rank 0 writes there, after training: what is found afterwards is this run's.
        for old in glob.glob(os.path.join(output, "checkpoint-*")) + glob.glob(os.path.join(output, "model*")):
            shutil.rmtree(old) if os.path.isdir(old) else os.remove(old)
    sys.argv = [script]
    g = runpy.run_path(script, run_name="__main__")
    hvd, model = g["hvd"], g["model"]
    rank, size = hvd.rank(), hvd.size()
    h = hashlib.blake2b(digest_size=16)
    for w in model.weights:
        h.update(w.numpy().tobytes())
    digests = hvd.allgather_object(h.hexdigest())
    if len(set(digests)) != 1:
        print(f"rank {rank}: FAIL: weights differ across ranks after fit: {digests}", file=sys.stderr)
        return 1
    losses = model.history.history["loss"]
    if not losses[-1] < losses[0]:
        print(f"rank {rank}: FAIL: the loss did not fall: {losses}", file=sys.stderr)
        return 3
    if rank == 0:
        keras3 = g["keras3"]
        model_path = os.path.join(output, "model.keras" if keras3 else "model")
        checkpoints = sorted(glob.glob(os.path.join(output, "checkpoint-*")))
        epochs = len(losses)
        if len(checkpoints) != epochs or not os.path.exists(model_path):
            print(f"rank 0: FAIL: expected {epochs} checkpoints and {model_path} in {output}, found "
                  f"{sorted(os.listdir(output))}", file=sys.stderr)
            return 4
        print(f"OK: weights bitwise identical on all {size} ranks ({digests[0]}), loss {losses[0]:.4f} -> "
              f"{losses[-1]:.4f}, {len(checkpoints)} checkpoints and {os.path.basename(model_path)} saved "
              f"by rank 0 (Keras {3 if keras3 else 2})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
