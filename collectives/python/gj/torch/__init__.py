"""gj.torch: a Horovod-compatible PyTorch frontend of the gj collectives library.

    import gj.torch as hvd        # instead of: import horovod.torch as hvd
    hvd.init()
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

Pure Python over the library's C ABI (ctypes), so one package serves every torch version. CPU
tensors go through the library's MPI/shared-memory backend, CUDA tensors (device pointer and
torch's current stream, no host copy) through NCCL. Where gj differs from Horovod, docs/torch.md
says how.
"""

from ._basics import (cross_rank, cross_size, init, is_homogeneous, is_initialized, local_rank, local_size,
                      rank, shutdown, size)
from ..common.capabilities import (ccl_built, cuda_built, ddl_built, gloo_built, gloo_enabled, mpi_built, mpi_enabled,
                            mpi_threads_supported, nccl_built, rocm_built)
from ..common.process_sets import ProcessSet, add_process_set, global_process_set, remove_process_set
from .compression import Compression
from ..common.exceptions import HorovodInternalError, HostsUpdatedInterrupt
from .functions import allgather_object, broadcast_object, broadcast_optimizer_state, broadcast_parameters
from .alltoall import alltoall, alltoall_async
from .mpi_ops import (Adasum, Average, Max, Min, Product, Sum, allgather, allgather_async, allreduce,
                      allreduce_, allreduce_async, allreduce_async_, barrier, broadcast, broadcast_,
                      broadcast_async, broadcast_async_, grouped_allgather, grouped_allgather_async,
                      grouped_allreduce, grouped_allreduce_, grouped_allreduce_async,
                      grouped_allreduce_async_, grouped_reducescatter, grouped_reducescatter_async,
                      join, poll, reducescatter, reducescatter_async, sparse_allreduce_async, synchronize)
from .optimizer import DistributedOptimizer
from .sync_batch_norm import SyncBatchNorm
from ..common.timeline import start_timeline, stop_timeline
from . import elastic
from ._stop import stop_requested

__all__ = [
    "init", "shutdown", "is_initialized", "rank", "size", "local_rank", "local_size", "cross_rank",
    "cross_size", "is_homogeneous", "mpi_built", "mpi_enabled", "mpi_threads_supported", "gloo_built",
    "gloo_enabled", "nccl_built", "cuda_built", "rocm_built", "ddl_built", "ccl_built",
    "ProcessSet", "global_process_set", "add_process_set", "remove_process_set",
    "Average", "Sum", "Adasum", "Min", "Max", "Product", "Compression",
    "allreduce", "allreduce_", "allreduce_async", "allreduce_async_", "grouped_allreduce",
    "grouped_allreduce_", "grouped_allreduce_async", "grouped_allreduce_async_",
    "allgather", "allgather_async", "grouped_allgather", "grouped_allgather_async",
    "broadcast", "broadcast_", "broadcast_async", "broadcast_async_",
    "reducescatter", "reducescatter_async", "grouped_reducescatter", "grouped_reducescatter_async",
    "alltoall", "alltoall_async", "SyncBatchNorm", "start_timeline", "stop_timeline",
    "elastic",
    "sparse_allreduce_async", "barrier", "join", "poll", "synchronize",
    "broadcast_parameters", "broadcast_optimizer_state", "broadcast_object", "allgather_object",
    "DistributedOptimizer", "HorovodInternalError", "HostsUpdatedInterrupt", "stop_requested",
]
