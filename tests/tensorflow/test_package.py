"""gj.tensorflow as a package (one process, no MPI job): what importing it does and does not do,
and calls before init()."""

import subprocess
import sys


def _python(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_import_loads_no_keras_and_leaves_the_excepthook_alone():
    out = _python("import sys, tensorflow; before = sys.excepthook; had = 'keras' in sys.modules; import gj.tensorflow as hvd; "
                  "assert sys.excepthook is before; assert had or 'keras' not in sys.modules, 'keras loaded'; "
                  "assert not hvd.is_initialized(); print('ok')")
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]


def test_calls_before_init_raise_as_horovod():
    out = _python("import tensorflow as tf, gj.tensorflow as hvd\n"
                  "for fn in (hvd.rank, hvd.size, lambda: hvd.allreduce(tf.ones(1)), hvd.rank_op):\n"
                  "    try:\n        fn()\n    except ValueError as e:\n"
                  "        assert 'gj.tensorflow is not initialized; call gj.tensorflow.init() first' in str(e), e\n"
                  "    else:\n        raise SystemExit('no error')\n"
                  "print('ok')")
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]


def test_public_api_is_horovods():
    names = ["init", "shutdown", "rank", "size", "local_rank", "local_size", "cross_rank", "cross_size",
             "is_initialized", "mpi_built", "mpi_enabled", "gloo_built", "nccl_built", "cuda_built", "allreduce",
             "grouped_allreduce", "allgather", "grouped_allgather", "broadcast", "broadcast_", "alltoall",
             "reducescatter", "grouped_reducescatter", "join", "barrier", "broadcast_variables", "broadcast_object",
             "broadcast_object_fn", "allgather_object", "Average", "Sum", "Adasum", "Min", "Max", "Product",
             "Compression", "ProcessSet", "add_process_set", "remove_process_set", "global_process_set",
             "rank_op", "size_op", "local_rank_op", "local_size_op", "DistributedGradientTape",
             "PartialDistributedGradientTape", "DistributedOptimizer", "SyncBatchNormalization", "elastic",
             "HorovodInternalError", "start_timeline", "stop_timeline", "broadcast_global_variables",
             "_executing_eagerly"]
    out = _python("import gj.tensorflow as hvd; print([n for n in %r if not hasattr(hvd, n)])" % names)
    assert out.returncode == 0 and out.stdout.strip().endswith("[]"), out.stdout + out.stderr[-2000:]


def test_the_fallback_says_why_once_at_init_and_names_its_path():
    """The compiled ops absent (GJ_TF_OPS names no file): collectives_path() is the fallback's,
    and init() says once, on rank 0's stderr, why and how to build the ops."""
    import os
    env = dict(os.environ, GJ_TF_OPS="/nonexistent/_gj_tf_ops.so")
    out = subprocess.run([sys.executable, "-c",
                          "import tensorflow as tf, gj.tensorflow as hvd; hvd.init(); hvd.init(); "
                          "print(hvd.collectives_path()); print(hvd.allreduce(tf.ones(2), op=hvd.Sum).numpy())"],
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[0] == "numpy_function", out.stdout
    notes = [line for line in out.stderr.splitlines() if "gj.tensorflow: collectives run as tf.numpy_function" in line]
    assert len(notes) == 1, out.stderr[-2000:]
    assert "/nonexistent/_gj_tf_ops.so does not exist" in notes[0] and "cmake -DGJ_TF_PYTHON=" in notes[0], notes
