"""gj.tensorflow's compiled ops (collectives/python/tf_ops): the collectives as TensorFlow
AsyncOpKernels over the library's C ABI, and GjStatus. Built with the library against the
installed TensorFlow, next to this file as _gj_tf_ops.so ($GJ_TF_OPS names another path).

Which path a process runs is decided once, here, from whether that library loads:
  "ops"             every collective is one compiled op (eagerly and inside a graph);
  "numpy_function"  the library is absent or built for another TensorFlow: every collective is
                    one tf.numpy_function over _host.py (the same results, a Python callback
                    per call, graph errors as UnknownError without GjStatus).
path() says which; init() says once, on rank 0's stderr, when it is the fallback, why and how to
build the ops; the timeline's header names it. A job's ranks must run the same path (the
agreement hashes differ between the two, so mixed ranks raise a disagreement, never a wrong
result)."""

import ctypes
import os
import sys

import tensorflow as tf

ENV = "GJ_TF_OPS"
_FILE = "_gj_tf_ops.so"
OPS, NUMPY_FUNCTION = "ops", "numpy_function"
_loaded = {}
_bound = {}  # process set id -> the communicator handle the library's table has for it


def library_path():
    return os.environ.get(ENV) or os.path.join(os.path.dirname(os.path.abspath(__file__)), _FILE)


def module():
    """The loaded op module, or None (why() says why)."""
    if "module" not in _loaded:
        where = library_path()
        _loaded["module"], _loaded["why"], _loaded["c"] = None, None, None
        if not os.path.exists(where):
            _loaded["why"] = f"{where} does not exist"
        else:
            try:
                from .. import _lib  # noqa: F401  the collectives library first: the ops link it by soname
                _loaded["module"] = tf.load_op_library(where)
                _loaded["c"] = ctypes.CDLL(where)  # the same loaded object: its comm table
                _loaded["c"].gj_tf_set_comm.argtypes = [ctypes.c_int64, ctypes.c_void_p]
                _loaded["c"].gj_tf_set_comm.restype = ctypes.c_int
            except (tf.errors.NotFoundError, OSError, AttributeError) as e:  # built against another TensorFlow
                _loaded["module"] = None
                _loaded["why"] = f"{where} does not load into TensorFlow {tf.__version__}: {e}"
    return _loaded["module"]


def why():
    module()
    return _loaded["why"]


def path():
    """"ops" when the compiled ops run the collectives, else "numpy_function"."""
    return OPS if module() is not None else NUMPY_FUNCTION


def how_to_build():
    return ("build gj with the TensorFlow environment (cmake -DGJ_TF_PYTHON=<its python>, the target gj_python; "
            f"docs/tensorflow.md) or set {ENV} to the built {_FILE}")


def announce(rank, out=None):
    """At init: one line on rank 0 when the fallback runs, saying why and how to build the ops."""
    if rank == 0 and path() != OPS:
        print(f"gj.tensorflow: collectives run as tf.numpy_function callbacks (a Python call and host copies per "
              f"collective, no GPU kernels) because the compiled ops are not available: {why()}; to get them, "
              f"{how_to_build()}", file=out or sys.stderr, flush=True)


def missing():
    """The note a graph error carries when GjStatus is missing (UnknownError instead of Horovod's class)."""
    return (f" [gj.tensorflow's compiled ops are not available ({why()}), so TensorFlow reports this graph error "
            f"as UnknownError rather than Horovod's class: {how_to_build()}]")


def cpu_only():
    """True when the ops must run on the CPU although TensorFlow has GPUs: the library has no NCCL
    (built without it, or none loads: gj.common.capabilities.nccl_built), so its device calls
    would refuse GPU buffers; TensorFlow then copies a GPU tensor to the host and back, as the
    numpy_function path does."""
    if "cpu_only" not in _loaded:
        from ..common.capabilities import nccl_built
        _loaded["cpu_only"] = bool(tf.config.list_logical_devices("GPU")) and not nccl_built()
    return _loaded["cpu_only"]


def bind(process_set, what):
    """process_set's id, its communicator made known to the ops under it (an op of it is made next)."""
    from ..common.process_sets import comm_of
    from .exceptions import TensorFlowInvalidArgumentError
    try:
        handle = comm_of(process_set, what).handle
    except ValueError as e:  # not registered, or this rank not in it: Horovod's InvalidArgumentError
        raise TensorFlowInvalidArgumentError(str(e)) from None
    handle = handle.value if isinstance(handle, ctypes.c_void_p) else handle
    pid = process_set.process_set_id
    if _bound.get(pid) != handle:
        if _loaded["c"].gj_tf_set_comm(pid, handle) != 0:
            raise ValueError(f"gj.tensorflow: the ops cannot query the communicator of {process_set!r}")
        _bound[pid] = handle
    return pid
