#!/usr/bin/env python3
"""A Keras training (Keras 3, or Keras 2 with TF_USE_LEGACY_KERAS=1) that stops cleanly when the
job is asked to stop and goes on from its last checkpoint when it starts again:

    gj-mpirun --max-restarts 2 keras_resume.py --checkpoint /ckpt/model.weights.h5

- gj.tensorflow.keras.callbacks.StopOnRequestCallback: when the pod is being deleted (gj-mpirun
  got SIGTERM), model.fit stops after the same batch on every rank and rank 0 saves the weights
  there, atomically, with the epoch and batch next to it (<checkpoint>.stop.json).
- Rank 0 also saves the weights at each epoch's end, atomically (a failure then loses at most an
  epoch; gj-mpirun --max-restarts restarts the job after one).
- At start every rank loads the checkpoint when there is one and fits from its epoch
  (initial_epoch): the epoch a stop interrupted is done again from its start. (Plain SGD has no
  optimizer state; with one, save the whole model: filepath=".keras" on Keras 3.)
--batch-seconds sleeps each batch (a longer job, for trying the stop by hand).
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import tensorflow as tf

import gj.tensorflow as hvd
from gj.common.checkpoint import atomic_write, atomic_write_with
from gj.tensorflow.keras.callbacks import BroadcastGlobalVariablesCallback, StopOnRequestCallback


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", required=True, help="weights file, ending in .weights.h5")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-seconds", type=float, default=0.0)
    return p.parse_args()


def resume_epoch(checkpoint):
    """The epoch to go on from: the later of an epoch-end checkpoint's next epoch and a stop's
    epoch (done again from its start); both write the same weights file, the later one last."""
    epoch = 0
    point = StopOnRequestCallback.resume_point(checkpoint)
    if point is not None:
        epoch = point["epoch"]
    if os.path.exists(checkpoint + ".epoch.json"):
        with open(checkpoint + ".epoch.json") as f:
            epoch = max(epoch, json.load(f)["epoch"])
    return epoch


def main():
    args = parse_args()
    hvd.init()
    keras = tf.keras
    rng = np.random.default_rng(hvd.rank())
    x = rng.normal(size=(512, 8)).astype("float32")
    y = (x.sum(axis=1, keepdims=True) * 0.5).astype("float32")
    model = keras.Sequential([keras.Input(shape=(8,)), keras.layers.Dense(16, activation="tanh"),
                              keras.layers.Dense(1)])
    model.compile(optimizer=hvd.keras.DistributedOptimizer(keras.optimizers.SGD(0.01)), loss="mse")
    initial_epoch = 0
    if os.path.exists(args.checkpoint):  # every rank reads it
        model.load_weights(args.checkpoint)
        initial_epoch = resume_epoch(args.checkpoint)
    print(f"rank {hvd.rank()} attempt {os.environ.get('GJ_RESTART_COUNT', '0')} starts at epoch {initial_epoch}",
          flush=True)

    class Slow(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 0:
                print(f"rank {hvd.rank()} training", flush=True)
            time.sleep(args.batch_seconds)

    class EpochCheckpoint(keras.callbacks.Callback):
        """Rank 0, at each epoch's end (not one a stop cut short): the weights and the next epoch."""

        def on_epoch_end(self, epoch, logs=None):
            if self.model.stop_training:
                return  # StopOnRequestCallback saved this state mid-epoch
            atomic_write_with(args.checkpoint, lambda tmp: self.model.save_weights(tmp))
            atomic_write(args.checkpoint + ".epoch.json", lambda f: f.write(json.dumps({"epoch": epoch + 1}).encode()))

    stop = StopOnRequestCallback(filepath=args.checkpoint)
    callbacks = [BroadcastGlobalVariablesCallback(0), Slow(), stop]
    if hvd.rank() == 0:
        callbacks.append(EpochCheckpoint())
    model.fit(x, y, batch_size=16, epochs=args.epochs, initial_epoch=initial_epoch, callbacks=callbacks,
              verbose=0)
    if stop.stopped_epoch is not None:
        print(f"rank {hvd.rank()} STOP at epoch {stop.stopped_epoch} batch {stop.stopped_batch}", flush=True)
    else:
        print(f"rank {hvd.rank()} DONE", flush=True)
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
