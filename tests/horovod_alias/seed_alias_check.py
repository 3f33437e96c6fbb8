#!/usr/bin/env python3
"""Runs one of seed 000's Horovod scripts (seed_torch.py, seed_tf.py: the seed's bytes but for the
device and path lines a CPU-only machine needs) unchanged in this process, under `gj-mpirun
--horovod-alias`, so its `import horovod.torch` / `import horovod.tensorflow` is gj's alias. Only
the data is shrunk from outside the script, to GJ_SEED_ROWS rows: torch's TensorDataset keeps its
first rows, and tf.keras.datasets.mnist.load_data (which would download MNIST) returns that many
rows of MNIST's shapes and dtypes made here (ten class templates plus noise, each rank its own).
Nothing of gj is imported before the script's own imports.

Then on every rank: the horovod modules are gj's module objects, horovod.__version__ is gj's, and
the model's weights are bitwise identical on all ranks (each trained on its own data); rank 0
wrote the output file(s) into $GJ_SEED_OUTPUT.

    gj-mpirun --horovod-alias seed_alias_check.py torch|tf <script>
Exit 0 ok, 1 weights differ, 2 the modules are not gj's, 4 output missing.
"""

import glob
import hashlib
import os
import runpy
import shutil
import sys


def shrink_torch(rows):
    import torch.utils.data as data

    class FirstRows(data.TensorDataset):
        def __init__(self, *tensors):
            super().__init__(*(t[:rows] for t in tensors))

    data.TensorDataset = FirstRows


def shrink_tf(rows, rank):
    import numpy as np
    import tensorflow as tf

    def load_data(path="mnist.npz"):
        templates = np.random.default_rng(0).integers(0, 256, size=(10, 28, 28))
        rng = np.random.default_rng(1 + rank)
        labels = rng.integers(0, 10, size=rows).astype(np.uint8)
        noise = rng.integers(-96, 97, size=(rows, 28, 28))
        images = np.clip(templates[labels] // 2 + noise + 64, 0, 255).astype(np.uint8)
        return (images, labels), (images[:0], labels[:0])

    tf.keras.datasets.mnist.load_data = load_data


def weights_digest(framework, model):
    h = hashlib.blake2b(digest_size=16)
    if framework == "torch":
        import torch
        for name, t in sorted(model.state_dict().items()):
            h.update(name.encode())
            h.update(t.detach().contiguous().view(-1).view(dtype=torch.uint8).numpy().tobytes())
    else:
        for w in model.weights:
            h.update(w.numpy().tobytes())
    return h.hexdigest()


def main(framework, script):
    output = os.environ["GJ_SEED_OUTPUT"]
    rank_env = os.environ.get("RANK", "0")
    if rank_env == "0":  # only rank 0 writes there, after training: what is found afterwards is this run's
        for old in glob.glob(os.path.join(output, "*")):
            shutil.rmtree(old) if os.path.isdir(old) else os.remove(old)
    rows = int(os.environ.get("GJ_SEED_ROWS", "256"))
    shrink_torch(rows) if framework == "torch" else shrink_tf(rows, int(rank_env))
    sys.argv = [script]
    g = runpy.run_path(script, run_name="__main__")
    hvd, model = g["hvd"], g["model"]
    import gj
    import horovod
    frontend = "gj.torch" if framework == "torch" else "gj.tensorflow"
    aliases = {"horovod.torch": "gj.torch"} if framework == "torch" else {
        "horovod.tensorflow": "gj.tensorflow", "horovod.tensorflow.keras": "gj.tensorflow.keras",
        "horovod.keras": "gj.tensorflow.keras"}
    if framework != "torch":
        import horovod.keras, horovod.tensorflow.keras  # noqa: F401  the Keras names too
    wrong = [a for a, m in aliases.items() if sys.modules.get(a) is not sys.modules.get(m) or m not in sys.modules]
    if hvd is not sys.modules[frontend] or wrong or horovod.__version__ != gj.__version__:
        print(f"rank {hvd.rank()}: FAIL: hvd is {hvd!r}, not {frontend}; not gj's: {wrong}; horovod.__version__ "
              f"{horovod.__version__!r}, gj's {gj.__version__!r}", file=sys.stderr)
        return 2
    digests = hvd.allgather_object(weights_digest(framework, model))
    if len(set(digests)) != 1:
        print(f"rank {hvd.rank()}: FAIL: weights differ across ranks after training: {digests}", file=sys.stderr)
        return 1
    if hvd.rank() == 0:
        expected = ["model.pth"] if framework == "torch" else ["model", "checkpoint-1.h5"]
        missing = [f for f in expected if not os.path.exists(os.path.join(output, f))]
        if missing:
            print(f"rank 0: FAIL: {missing} not in {output}: {sorted(os.listdir(output))}", file=sys.stderr)
            return 4
        print(f"OK: {script} ran on {frontend} as horovod (gj {gj.__version__}, {horovod.__file__}); weights "
              f"bitwise identical on all {hvd.size()} ranks ({digests[0]})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
