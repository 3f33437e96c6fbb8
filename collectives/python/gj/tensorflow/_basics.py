"""gj.tensorflow's process state: gj.common's (basics, state, process sets, capabilities) under
the names gj.tensorflow's modules use, with init() naming gj.tensorflow in its messages."""

from ..common import basics as _common
from ..common.basics import (cross_rank, cross_size, is_homogeneous, is_initialized,  # noqa: F401
                             local_rank, local_size, rank, shutdown, size)
from ..common.capabilities import (ccl_built, cuda_built, ddl_built, gloo_built, gloo_enabled,  # noqa: F401
                                   mpi_built, mpi_enabled, mpi_threads_supported, nccl_built, rocm_built)
from ..common.process_sets import (ProcessSet, add_process_set, comm_of, describe_ranks,  # noqa: F401
                                   global_process_set, registered, remove_process_set)
from ..common.state import require_init, waiting  # noqa: F401
from ..common import state as _state

FRONTEND = "gj.tensorflow"
_state.frontend = FRONTEND  # the package whose init() an error before init() names


def init(comm=None, process_sets=None):
    """Initializes gj.tensorflow (idempotent): gj.common.basics.init, whose docstring says what
    it does."""
    from . import _ops
    _state.notes["collectives"] = _ops.path()  # the timeline's header names the path
    first = _state.world is None
    _common.init(comm, process_sets, frontend=FRONTEND)
    if first:
        _ops.announce(_state.world.rank)
