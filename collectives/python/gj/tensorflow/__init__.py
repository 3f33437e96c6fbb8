"""gj.tensorflow: a Horovod-compatible TensorFlow frontend of the gj collectives library.

    import gj.tensorflow as hvd        # instead of: import horovod.tensorflow as hvd
    hvd.init()
    tape = hvd.DistributedGradientTape(tape)
    hvd.broadcast_variables(model.variables, root_rank=0)

On gj.common's framework-neutral core (as gj.torch). Every collective runs eagerly and inside
tf.function as one stateful op per call: a compiled AsyncOpKernel over the library's C ABI when
the ops built with the library load (collectives_path() == "ops"), else a tf.numpy_function over
the same library through ctypes ("numpy_function"; init() says why on rank 0's stderr):
docs/tensorflow.md, "How collectives enter the graph". gj.tensorflow.keras is the Keras part
(DistributedOptimizer, callbacks).
"""

from ._basics import (ccl_built, cross_rank, cross_size, cuda_built, ddl_built, gloo_built, gloo_enabled, init,
                      is_homogeneous, is_initialized, local_rank, local_size, mpi_built, mpi_enabled,
                      mpi_threads_supported, nccl_built, rank, rocm_built, shutdown, size)
from ..common.exceptions import HorovodInternalError, HostsUpdatedInterrupt
from ..common.process_sets import ProcessSet, add_process_set, global_process_set, remove_process_set
from ..common.timeline import start_timeline, stop_timeline
from .compression import Compression
from .mpi_ops import (Adasum, Average, Max, Min, Product, Sum, allgather, allreduce, alltoall, barrier,
                      broadcast, broadcast_, grouped_allgather, grouped_allreduce, grouped_reducescatter,
                      local_rank_op, local_size_op, process_set_included_op, rank_op, reducescatter, size_op)
from ._join import join
from ._ops import path as collectives_path
from .functions import (allgather_object, broadcast_global_variables, broadcast_object, broadcast_object_fn,
                        broadcast_variables)
from .gradients import allreduce_gradients
from .gradient_tape import DistributedGradientTape, PartialDistributedGradientTape
from .optimizer import DistributedOptimizer
from . import elastic
from ._stop import stop_requested
from .util import _executing_eagerly  # Horovod's tests call hvd._executing_eagerly()

__all__ = [
    "init", "shutdown", "is_initialized", "rank", "size", "local_rank", "local_size", "cross_rank",
    "cross_size", "is_homogeneous", "mpi_built", "mpi_enabled", "mpi_threads_supported", "gloo_built",
    "gloo_enabled", "nccl_built", "cuda_built", "rocm_built", "ddl_built", "ccl_built",
    "ProcessSet", "global_process_set", "add_process_set", "remove_process_set",
    "Average", "Sum", "Adasum", "Min", "Max", "Product", "Compression",
    "allreduce", "grouped_allreduce", "allgather", "grouped_allgather", "broadcast", "broadcast_",
    "alltoall", "reducescatter", "grouped_reducescatter", "join", "barrier",
    "size_op", "rank_op", "local_rank_op", "local_size_op", "process_set_included_op",
    "broadcast_variables", "broadcast_global_variables", "broadcast_object", "broadcast_object_fn", "allgather_object",
    "allreduce_gradients", "DistributedGradientTape", "PartialDistributedGradientTape", "DistributedOptimizer",
    "SyncBatchNormalization", "start_timeline", "stop_timeline", "elastic",
    "HorovodInternalError", "HostsUpdatedInterrupt", "stop_requested", "collectives_path",
]


def __getattr__(name):
    # SyncBatchNormalization is a Keras layer: Keras loads when it is first used, not at import.
    if name == "SyncBatchNormalization":
        from .sync_batch_norm import SyncBatchNormalization
        return SyncBatchNormalization
    # hvd.callbacks / hvd.keras after `import gj.tensorflow as hvd` (the seed script's
    # hvd.callbacks.BroadcastGlobalVariablesCallback): loaded on first use, like Keras itself.
    if name in ("callbacks", "keras"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'gj.tensorflow' has no attribute {name!r}")
