"""What gj does when the interpreter exits, installed by init() (importing a frontend changes
nothing): an initialized gj shuts down (collective, like Horovod's atexit hook); after an
uncaught exception it aborts instead, so mpiexec ends the other ranks rather than leaving them
waiting in the shutdown. A child made by os.fork() inherits the hooks but not the job: it runs
neither (the communicators are its parent's)."""

import atexit
import os
import sys

_failed = False  # an uncaught exception: abort rather than a collective shutdown
_owner = None    # the pid that called install()
_hooks = None    # (is_initialized, shutdown, abort_all)
_previous_excepthook = None


def _at_exit():
    if _hooks is None or os.getpid() != _owner:
        return
    is_initialized, shutdown, abort_all = _hooks
    if not is_initialized():
        return
    if _failed:
        abort_all()
        return
    try:
        shutdown()
    except Exception as e:  # noqa: BLE001  (nothing to raise to at exit)
        print(f"gj: shutdown at exit failed: {e}", file=sys.stderr)


def _excepthook(kind, value, tb):
    global _failed
    if os.getpid() == _owner:
        _failed = True
    _previous_excepthook(kind, value, tb)


def install(is_initialized, shutdown, abort_all):
    """Once per process (a later call only updates the callables): the atexit hook and an
    excepthook chained in front of the one in place now."""
    global _hooks, _owner, _previous_excepthook
    _hooks = (is_initialized, shutdown, abort_all)
    if _owner == os.getpid():
        return
    first = _owner is None
    _owner = os.getpid()
    if first:
        _previous_excepthook = sys.excepthook
        sys.excepthook = _excepthook
        atexit.register(_at_exit)
