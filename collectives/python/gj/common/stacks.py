"""The stack dump gj-mpirun's rank wrapper asks for when this rank holds up a collective.

The wrapper gives every rank a pipe as GJ_RANK_STACK_FD (docs/agent.md "Hangs"). install(), at
init, registers faulthandler on a real-time signal to write every thread's Python stack to that
pipe, and announces the signal on it (`gj-stack signal=N`): the wrapper sends it only to
programs that said so, so a program without the handler is never killed by it. faulthandler
writes from the signal handler itself, without the GIL: a rank stuck in C code (a blocked
collective, a sleep, a lock) still dumps.
"""

import faulthandler
import os
import signal

ENV = "GJ_RANK_STACK_FD"
_installed = []


def choose_signal(getsignal=signal.getsignal):
    """A real-time signal nobody handles (SIGRTMIN+4 first), or None."""
    low = getattr(signal, "SIGRTMIN", 34)
    high = getattr(signal, "SIGRTMAX", 64)
    for sig in range(low + 4, min(low + 12, high)):
        try:
            if getsignal(sig) in (signal.SIG_DFL, None):
                return sig
        except (ValueError, OSError):
            continue
    return None


def install(environ=os.environ):
    """Registers the dump on GJ_RANK_STACK_FD's pipe; a no-op without the variable or when
    already installed. Returns the signal number, or None."""
    if _installed:
        return _installed[0]
    raw = environ.get(ENV, "")
    if not raw:
        return None
    try:
        fd = int(raw)
        os.fstat(fd)
    except (ValueError, OSError):
        return None  # not ours to complain about: the wrapper made it, or nobody did
    sig = choose_signal()
    if sig is None:
        return None
    os.set_inheritable(fd, False)  # the program's own children do not hold the wrapper's pipe
    faulthandler.register(sig, file=fd, all_threads=True, chain=False)
    os.write(fd, f"gj-stack signal={sig}\n".encode())
    _installed.append(sig)
    return sig
