"""What gj.torch does when the interpreter exits: an initialized gj.torch shuts down (collective,
like Horovod's atexit hook); after an uncaught exception it aborts instead, so mpiexec ends the
other ranks rather than leaving them waiting in the shutdown."""

import atexit
import sys

from . import _basics, _process_sets

_failed = False  # an uncaught exception: abort rather than a collective shutdown


def _at_exit():
    if not _basics.is_initialized():
        return
    if _failed:
        _process_sets.abort_all()
        return
    try:
        _basics.shutdown()
    except Exception as e:  # noqa: BLE001  (nothing to raise to at exit)
        print(f"gj.torch: shutdown at exit failed: {e}", file=sys.stderr)


_previous_excepthook = sys.excepthook


def _excepthook(kind, value, tb):
    global _failed
    _failed = True
    _previous_excepthook(kind, value, tb)


sys.excepthook = _excepthook
atexit.register(_at_exit)
