"""horovod.tensorflow.keras.callbacks on Keras 3 and Keras 2. gj.tensorflow.callbacks is this
same module (the seed script writes hvd.callbacks after `import horovod.tensorflow as hvd`).

Each class is a callback of the Keras of the model it is given (a Keras 3 model takes only Keras 3
callbacks): it derives from KerasCallback (_callback_base.py), not from one Keras' Callback. The learning rate is read and written through optimizer.learning_rate
(Keras 3 removed keras.backend.get_value/set_value, which Horovod's callbacks use)."""

import gj.tensorflow as hvd

from . import _backend
from ._callback_base import KerasCallback, KerasModelCheckpoint


class BroadcastGlobalVariablesCallback(KerasCallback):
    """Broadcasts the model's variables and the optimizer's from root_rank at the end of the
    first batch (when the optimizer's variables exist), so every rank continues from root's
    state, as Horovod does; local_variables (variables or layers' variables) stay each rank's."""

    def __init__(self, root_rank, device="", local_variables=None):
        super().__init__()
        self.root_rank = root_rank
        self.device = device
        self.local_variables = {id(v) for v in _backend.tf_variables(local_variables or [])}
        self.broadcast_done = False

    def _broadcast(self, variables):
        variables = [v for v in _backend.tf_variables(variables) if id(v) not in self.local_variables]
        hvd.broadcast_variables(variables, root_rank=self.root_rank)

    def on_batch_end(self, batch, logs=None):
        if self.broadcast_done:
            return
        self._broadcast(self.model.variables)
        if getattr(self.model, "optimizer", None) is not None:
            self._broadcast(_backend.optimizer_variables(self.model.optimizer))
        self.broadcast_done = True


class MetricAverageCallback(KerasCallback):
    """At each epoch's end, replaces every metric in the logs by its average over the ranks (one
    allreduce of a float64 vector, metrics in name order), before the callbacks after it read them."""

    def __init__(self, device=""):
        super().__init__()
        self.device = device

    def on_epoch_end(self, epoch, logs=None):
        if not logs:
            return
        import tensorflow as tf
        names = sorted(logs)
        values = tf.constant([_backend.to_float(logs[n]) for n in names], dtype=tf.float64)
        for n, v in zip(names, hvd.allreduce(values, op=hvd.Average).numpy()):
            logs[n] = float(v)


class LearningRateScheduleCallback(KerasCallback):
    """Sets the learning rate to initial_lr * multiplier(epoch) from start_epoch to end_epoch
    (exclusive): at each epoch's first batch when staircase, else at every batch with a
    fractional epoch (epoch + batch / steps_per_epoch). A constant multiplier is exponential
    decay (staircase). momentum_correction scales a variable momentum by new_lr / old_lr for
    that batch (Goyal et al.); a Python-float momentum (Keras 3's and Keras 2's SGD) is a
    constant of the compiled step and is left alone."""

    def __init__(self, initial_lr, multiplier, start_epoch=0, end_epoch=None, staircase=True,
                 momentum_correction=True, steps_per_epoch=None):
        super().__init__()
        self.start_epoch = start_epoch
        self.end_epoch = end_epoch
        self.staircase = staircase
        self.momentum_correction = momentum_correction
        self.initial_lr = initial_lr
        self.restore_momentum = None
        self.steps_per_epoch = steps_per_epoch
        self.current_epoch = None
        if not callable(multiplier):
            self.staircase = True
            self.multiplier = lambda epoch: multiplier
        else:
            self.multiplier = multiplier
        if self.initial_lr is None:
            raise ValueError("{}(initial_lr=None): initial_lr is required".format(type(self).__name__))

    def _autodetect_steps_per_epoch(self):
        if self.params.get("steps"):
            return self.params["steps"]
        if self.params.get("samples") and self.params.get("batch_size"):
            return self.params["samples"] // self.params["batch_size"]
        raise ValueError("{}: could not autodetect the number of steps per epoch (fit's params are {!r}); "
                         "pass steps_per_epoch=".format(type(self).__name__, self.params))

    def _momentum(self):
        m = getattr(self.model.optimizer, "momentum", None)
        return m if _backend.is_variable(m) else None

    def _adjust_learning_rate(self, epoch):
        optimizer = self.model.optimizer
        old_lr = _backend.to_float(optimizer.learning_rate)
        new_lr = self.initial_lr * self.multiplier(epoch)
        optimizer.learning_rate = new_lr
        momentum = self._momentum()
        if momentum is not None and self.momentum_correction and old_lr != 0:
            self.restore_momentum = _backend.to_float(momentum)
            momentum.assign(self.restore_momentum * new_lr / old_lr)

    def _restore_momentum_if_needed(self):
        if self.restore_momentum:
            self._momentum().assign(self.restore_momentum)
            self.restore_momentum = None

    def on_train_begin(self, logs=None):
        if self.initial_lr is None:
            self.initial_lr = _backend.to_float(self.model.optimizer.learning_rate)
        if not self.staircase and not self.steps_per_epoch:
            self.steps_per_epoch = self._autodetect_steps_per_epoch()

    def on_epoch_begin(self, epoch, logs=None):
        self.current_epoch = epoch

    def on_batch_begin(self, batch, logs=None):
        if (self.current_epoch < self.start_epoch
                or (self.end_epoch is not None and self.current_epoch >= self.end_epoch)):
            return
        if self.staircase and batch == 0:
            self._adjust_learning_rate(self.current_epoch)
        elif not self.staircase:
            self._adjust_learning_rate(self.current_epoch + float(batch) / self.steps_per_epoch)

    def on_batch_end(self, batch, logs=None):
        self._restore_momentum_if_needed()

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = _backend.to_float(self.model.optimizer.learning_rate)


class LearningRateWarmupCallback(LearningRateScheduleCallback):
    """Goyal et al.'s gradual warmup: from initial_lr / size to initial_lr over warmup_epochs,
    batch by batch (lr = initial_lr / size * (epoch * (size - 1) / warmup_epochs + 1), epoch
    fractional and shifted by one step so that each epoch ends on a round value)."""

    def __init__(self, initial_lr, warmup_epochs=5, momentum_correction=True, steps_per_epoch=None,
                 verbose=0):
        def multiplier(epoch):
            epoch += 1.0 / self.steps_per_epoch
            return 1.0 / hvd.size() * (epoch * (hvd.size() - 1) / warmup_epochs + 1)

        super().__init__(initial_lr, multiplier, start_epoch=0, end_epoch=warmup_epochs, staircase=False,
                         momentum_correction=momentum_correction, steps_per_epoch=steps_per_epoch)
        self.verbose = verbose

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        if epoch == self.end_epoch - 1 and self.verbose > 0:
            print("\nEpoch %d: finished gradual learning rate warmup to %g." %
                  (epoch + 1, _backend.to_float(self.model.optimizer.learning_rate)))


class BestModelCheckpoint(KerasModelCheckpoint):
    """ModelCheckpoint(save_best_only=True) writing on rank 0 only. Horovod's signature has no filepath (its estimator sets .filepath later): pass
    filepath= here or set .filepath before fit; Keras 3 wants it to end in .keras or .h5."""

    def __init__(self, monitor="val_loss", verbose=0, mode="auto", save_freq="epoch", filepath=None):
        # Keras 3 checks the extension in __init__: a placeholder that passes, replaced below.
        super().__init__(filepath="gj_best_model.keras" if filepath is None else filepath, monitor=monitor,
                         verbose=verbose, save_best_only=True, save_weights_only=False, mode=mode,
                         save_freq=save_freq)
        if filepath is None:
            self.filepath = None

    def on_train_begin(self, logs=None):
        if self.filepath is None:
            raise ValueError("BestModelCheckpoint: filepath is None; pass filepath= or set .filepath before fit")
        super().on_train_begin(logs)

    def _save_model(self, epoch, batch, logs):
        if hvd.rank() != 0:
            return
        super()._save_model(epoch, batch, logs)


class StopOnRequestCallback(KerasCallback):
    """Stops model.fit at the same batch on every rank when the job is asked to stop (gj-mpirun
    got SIGTERM: the pod is being deleted; docs/tensorflow.md "Stopping on request"), and lets
    rank 0 save that batch's model first.

    Every `check_every` batches it calls gj.tensorflow.stop_requested() (one 8-byte allreduce,
    True on every rank at the same call); on True it sets model.stop_training, which Keras 3 and
    Keras 2 both honour after that batch. Rank 0 then saves, atomically (a temporary file in the
    same folder, fsync, rename: a crash leaves the previous file whole), to
    - filepath: model.save (".keras", ".h5") or, with save_weights_only or a ".weights.h5" name,
      model.save_weights; "{epoch}" and the logs' names are formatted in as ModelCheckpoint does;
    - or checkpoint, a keras ModelCheckpoint: its filepath and save_weights_only.
    Next to the file, "<file>.stop.json" records the epoch and batch (resume_point() reads it).
    stopped_epoch / stopped_batch say where it stopped (None when it did not)."""

    _SUFFIXES = (".keras", ".h5")

    def __init__(self, filepath=None, checkpoint=None, save_weights_only=None, check_every=1, verbose=1):
        super().__init__()
        if filepath is not None and checkpoint is not None:
            raise ValueError("StopOnRequestCallback: pass filepath= or checkpoint=, not both")
        if checkpoint is not None:
            # Keras 3's or Keras 2's (tf_keras) ModelCheckpoint, or a subclass (BestModelCheckpoint).
            if not any(c.__name__ == "ModelCheckpoint" for c in type(checkpoint).__mro__):
                raise ValueError(f"StopOnRequestCallback: checkpoint={checkpoint!r} is not a keras ModelCheckpoint")
            filepath = checkpoint.filepath
            if save_weights_only is None:
                save_weights_only = bool(checkpoint.save_weights_only)
        if filepath is not None:
            filepath = str(filepath)
            if not filepath.endswith(self._SUFFIXES):
                raise ValueError(f"StopOnRequestCallback: filepath={filepath!r} must end in .keras, .h5 or "
                                 f".weights.h5 (one file, so that it can be replaced atomically)")
        if not isinstance(check_every, int) or check_every < 1:
            raise ValueError(f"StopOnRequestCallback: check_every={check_every!r} must be a positive int of batches")
        self.filepath = filepath
        self.save_weights_only = bool(save_weights_only) or (filepath or "").endswith(".weights.h5")
        self.check_every = check_every
        self.verbose = verbose
        self.stopped_epoch = None
        self.stopped_batch = None
        self.saved_path = None
        self._epoch = 0
        self._batches = 0
        self._pending = False

    def on_train_begin(self, logs=None):
        # The first call tells gj-mpirun that this program polls, so that a SIGTERM from now on
        # gives it GJ_STOP_GRACE to save; a request already there stops fit after its first batch.
        self._pending = hvd.stop_requested()

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        self._batches += 1
        if not self._pending:
            if self._batches % self.check_every:
                return
            if not hvd.stop_requested():
                return
        self.model.stop_training = True
        self.stopped_epoch, self.stopped_batch = self._epoch, batch
        if self.filepath is not None:
            path = self.filepath.format(epoch=self._epoch + 1, batch=batch, **(logs or {}))
            self.saved_path = path
            if hvd.rank() == 0:
                self._save(path)
        if self.verbose and hvd.rank() == 0:
            where = f"; saved {self.saved_path}" if self.saved_path else ""
            print(f"StopOnRequestCallback: the job was asked to stop; fit stops after epoch {self._epoch} "
                  f"batch {batch} on every rank{where}", flush=True)

    def _save(self, path):
        import json

        from ...common.checkpoint import atomic_write, atomic_write_with
        if self.save_weights_only:
            atomic_write_with(path, lambda tmp: self.model.save_weights(tmp))
        else:
            atomic_write_with(path, lambda tmp: self.model.save(tmp))
        point = {"epoch": self.stopped_epoch, "batch": self.stopped_batch}
        atomic_write(path + ".stop.json", lambda f: f.write(json.dumps(point).encode()))

    @staticmethod
    def resume_point(filepath):
        """{"epoch": e, "batch": b} of the stop saved to filepath, or None when there is none:
        fit(initial_epoch=e) after loading filepath redoes the rest of epoch e."""
        import json
        try:
            with open(str(filepath) + ".stop.json") as f:
                return json.load(f)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            raise ValueError(f"StopOnRequestCallback.resume_point: {filepath}.stop.json is unreadable: {e}") from None
