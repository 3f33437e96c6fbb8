#!/usr/bin/env python3
"""Horovod's TensorFlow 2 synthetic benchmark (examples/tensorflow2/tensorflow2_synthetic_benchmark.py:
a keras.applications model on random images, SGD, sparse cross-entropy, one tf.function step),
img/s and step overhead over the same model without communication: gj.tensorflow's
DistributedGradientTape (Horovod's API, imported as hvd) against
tf.distribute.MultiWorkerMirroredStrategy (ring collectives over gRPC; TF_CONFIG built here with
one loopback port per rank) and, with --horovod mpi, horovod.tensorflow's own tape (its MPI
controller; bench/horovod/build.sh tensorflow builds it), in the same processes, one step of
each per round in a rotating order. Overhead = median over rounds of the step minus the same
round's no-comm step.

    mpiexec -np 2 python tf_synthetic.py [--model MobileNetV2] [--batch 16] [--image 128] [--steps 10]
                                         [--horovod mpi|none]
Keras 2 (tf-keras; TF_USE_LEGACY_KERAS=1, set here), as Horovod's benchmark is written for.
"""
import argparse
import json
import os
import sys
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import gj.tensorflow as hvd  # noqa: E402
from bench_stats import median_ci  # noqa: E402
from horovod_switch import HorovodSwitch  # noqa: E402


def init_horovod(controller):
    """horovod.tensorflow started on the MPI gj.tensorflow already initialized (MPI_THREAD_MULTIPLE),
    or None for --horovod none."""
    if controller == "none":
        return None
    os.environ.update({"HOROVOD_CONTROLLER": "mpi", "HOROVOD_CPU_OPERATIONS": "mpi"})
    try:
        import horovod.tensorflow as real
    except ImportError as e:
        raise SystemExit(f"tf_synthetic.py --horovod mpi: cannot import horovod.tensorflow ({e}): build it with "
                         "bench/horovod/build.sh tensorflow and run this program with that environment's python "
                         "(bench/peers/run.sh tf-horovod does)") from e
    real.init()
    if (real.rank(), real.size()) != (hvd.rank(), hvd.size()) or not real.mpi_enabled():
        raise RuntimeError(f"horovod.tensorflow started as rank {real.rank()} of {real.size()} "
                           f"(mpi_enabled={real.mpi_enabled()}); gj has {hvd.rank()} of {hvd.size()}")
    return real


def model_fn(name, image):
    return lambda: getattr(tf.keras.applications, name)(weights=None, input_shape=(image, image, 3))


def steps(args, rank, strategy, horovod):
    tf.random.set_seed(1000 + rank)
    data = tf.random.uniform([args.batch, args.image, args.image, 3])
    target = tf.random.uniform([args.batch, 1], minval=0, maxval=999, dtype=tf.int64)
    make = model_fn(args.model, args.image)
    loss_of = tf.keras.losses.sparse_categorical_crossentropy

    def plain(lib):
        """One step's callable: no communication (lib None), or lib's DistributedGradientTape
        (gj.tensorflow or horovod.tensorflow: the same API)."""
        model, opt = make(), tf.keras.optimizers.SGD(0.01)

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(loss_of(target, model(data, training=True)))
            if lib is not None:
                tape = lib.DistributedGradientTape(tape)
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        if lib is not None:
            step()  # the first step builds the optimizer's slots; then everyone starts from rank 0's state
            lib.broadcast_variables(model.variables, root_rank=0)
            lib.broadcast_variables(opt.variables(), root_rank=0)
        return lambda: step().numpy()

    out = {"local": plain(None), "gj": plain(hvd)}
    if horovod is not None:
        out["horovod"] = plain(horovod)
    if strategy is not None:
        with strategy.scope():
            model, opt = make(), tf.keras.optimizers.SGD(0.01)

        @tf.function
        def replica_step():
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(loss_of(target, model(data, training=True)))
            grads = tape.gradient(loss, model.trainable_variables)
            # Keras 2 in a replica context all-reduces (sums) the gradients across replicas; the
            # mean, as Horovod's tape gives, is the sum / ranks.
            n = tf.distribute.get_replica_context().num_replicas_in_sync
            opt.apply_gradients(zip([g / n for g in grads], model.trainable_variables))
            return loss

        @tf.function
        def mwms_step():
            return strategy.run(replica_step)
        out["mwms"] = lambda: mwms_step().numpy()
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="MobileNetV2", help="a tf.keras.applications model")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--image", type=int, default=128)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--mwms-port", type=int, default=int(os.environ.get("GJ_BENCH_MWMS_PORT", "29651")),
                   help="rank r's gRPC port for MultiWorkerMirroredStrategy: this + r on 127.0.0.1")
    p.add_argument("--no-mwms", action="store_true", help="leave MultiWorkerMirroredStrategy out")
    p.add_argument("--horovod", choices=("mpi", "none"), default="none",
                   help="also horovod.tensorflow's DistributedGradientTape (MPI controller)")
    args = p.parse_args()
    hvd.init()
    horovod = init_horovod(args.horovod)
    rank, size = hvd.rank(), hvd.size()
    tf.config.threading.set_intra_op_parallelism_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    tf.config.threading.set_inter_op_parallelism_threads(1)
    strategy = None
    if not args.no_mwms:
        os.environ["TF_CONFIG"] = json.dumps({
            "cluster": {"worker": [f"127.0.0.1:{args.mwms_port + r}" for r in range(size)]},
            "task": {"type": "worker", "index": rank}})
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
    steppers = steps(args, rank, strategy, horovod)
    modes = list(steppers)
    switch = HorovodSwitch(horovod)  # Horovod runs only for its own steps (horovod_switch.py)

    for _ in range(args.warmup):
        for m, fn in steppers.items():
            switch.before(m)
            fn()
    wall = {m: [0.0] * args.steps for m in modes}
    for k in range(args.steps):
        for m in modes[k % len(modes):] + modes[:k % len(modes)]:
            if switch.before(m):
                steppers[m]()
            hvd.barrier()
            t0 = time.perf_counter()
            steppers[m]()
            wall[m][k] = time.perf_counter() - t0
    # each round's slowest rank
    flat = hvd.allgather(tf.constant([[wall[m][k] for m in modes for k in range(args.steps)]], tf.float64))
    worst = tf.reduce_max(flat, axis=0).numpy().tolist()
    wall = {m: worst[i * args.steps:(i + 1) * args.steps] for i, m in enumerate(modes)}
    if rank == 0:
        load = " ".join(open("/proc/loadavg").read().split()[:3])
        with_hvd = f", horovod {sys.modules['horovod'].__version__} (mpi controller)" if horovod is not None else ""
        print(f"# TF synthetic benchmark: {args.model} {args.image}x{args.image}, batch {args.batch}, {size} ranks, "
              f"tensorflow {tf.__version__}{with_hvd}, {args.steps} interleaved rounds (slowest rank), overhead = "
              f"median of the per-round difference to no-comm [95 % CI], "
              f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, loadavg {load}")
        over = {m: median_ci([a - b for a, b in zip(wall[m], wall["local"])]) for m in modes}
        peers = [m for m in ("mwms", "horovod") if m in over]
        names = {"mwms": "MWMS", "horovod": "horovod"}
        print("| mode | step ms | img/s per rank | overhead ms [95 % CI] |"
              + "".join(f" overhead / {names[q]} overhead |" for q in peers))
        print("|---|---|---|---|" + "---|" * len(peers))
        for m in modes:
            med = sorted(wall[m])[len(wall[m]) // 2]
            rel = "".join(f" {over[m][0] / over[q][0]:.2f} |" if over[q][0] > 0 and m != "local" else " n/a |"
                          for q in peers)
            print(f"| {m} | {med * 1e3:.0f} | {args.batch / med:.1f} | {over[m][0] * 1e3:.0f} "
                  f"[{over[m][1] * 1e3:.0f}, {over[m][2] * 1e3:.0f}] |{rel}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
