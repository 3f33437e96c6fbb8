"""gj.tensorflow.stop_requested (gj/common/stop.py): the job's stop request, the same on every rank."""

from ..common import stop as _stop
from ..common.process_sets import global_process_set

__all__ = ["stop_requested"]


def stop_requested(process_set=global_process_set):
    """False until the job is asked to stop (gj-mpirun got SIGTERM: the pod is being deleted),
    then True on every rank of process_set at the same call: check it once per step and stop at
    that step everywhere (rank 0 saves). One 8-byte allreduce per call (docs/tensorflow.md "Stopping
    on request"); every rank of the set must call it at the same point."""
    import tensorflow as tf
    if not tf.executing_eagerly():
        raise RuntimeError("stop_requested() runs eagerly (a Python check between steps, as in a Keras callback); "
                           "inside tf.function it would run once, at tracing: call it outside the function")
    return _stop.stop_requested(process_set)
