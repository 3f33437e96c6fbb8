"""Horovod's stall settings on gj: no rank waits for ever in a collective a peer never joins.

    HOROVOD_STALL_CHECK_DISABLE          1: no stall warnings
    HOROVOD_STALL_CHECK_TIME_SECONDS     a rank that has waited this long in one collective warns
                                         once, naming the operation and the process set (60)
    HOROVOD_STALL_SHUTDOWN_TIME_SECONDS  a collective not complete after this long fails on every
                                         waiting rank with HorovodInternalError naming the rank it
                                         waited for: the library's GJ_COLL_TIMEOUT_MS, which this
                                         sets (default: GJ_COLL_TIMEOUT_MS's, 300 s)

plan() is pure (environment mapping in, settings out); the Watch below is the one thread.
"""

import os
import sys
import threading
import time

CHECK_DISABLE = "HOROVOD_STALL_CHECK_DISABLE"
CHECK_TIME = "HOROVOD_STALL_CHECK_TIME_SECONDS"
SHUTDOWN_TIME = "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS"
LIBRARY_TIMEOUT = "GJ_COLL_TIMEOUT_MS"
DEFAULT_CHECK_SECONDS = 60.0


def _seconds(env, name):
    raw = env.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"{name}={raw!r} is not a non-negative number of seconds")
    return value


def plan(env):
    """(seconds before the stall warning or None, {variable: value} to set for the library)."""
    disable = env.get(CHECK_DISABLE, "0")
    if disable not in ("0", "1", ""):
        raise ValueError(f"{CHECK_DISABLE}={disable!r} is not 0 or 1")
    check = _seconds(env, CHECK_TIME)
    check = None if disable == "1" else (DEFAULT_CHECK_SECONDS if check is None else check)
    if check == 0:
        check = None
    shutdown = _seconds(env, SHUTDOWN_TIME)
    if shutdown is None:
        return check, {}
    millis = str(int(round(shutdown * 1000)))
    mine = env.get(LIBRARY_TIMEOUT)
    if mine is not None and mine != millis:
        raise ValueError(f"{SHUTDOWN_TIME}={env[SHUTDOWN_TIME]!r} asks for a {millis} ms timeout but "
                         f"{LIBRARY_TIMEOUT}={mine!r} is set too; set one of them")
    return check, {LIBRARY_TIMEOUT: millis}


class Watch:
    """Warns once per operation that has waited longer than check seconds. enter()/leave()
    bracket every wait of this process for its peers."""

    def __init__(self, check_seconds, rank, out=sys.stderr, frontend="gj"):
        self._check, self._rank, self._out = check_seconds, rank, out
        self._frontend = frontend
        self._lock = threading.Lock()
        self._waiting = {}  # token -> [description, start, warned]
        self._next = 0
        self._thread = None
        if check_seconds is not None:
            self._thread = threading.Thread(target=self._run, name="gj stall check", daemon=True)
            self._thread.start()

    def enter(self, description):
        if self._thread is None:
            return None
        with self._lock:
            self._next += 1
            self._waiting[self._next] = [description, time.monotonic(), False]
            return self._next

    def leave(self, token):
        if token is not None:
            with self._lock:
                self._waiting.pop(token, None)

    def stalled(self, now):
        """Descriptions and wait times of the operations to warn about now (each once)."""
        out = []
        with self._lock:
            for entry in self._waiting.values():
                if not entry[2] and now - entry[1] >= self._check:
                    entry[2] = True
                    out.append((entry[0], now - entry[1]))
        return out

    def _run(self):
        while True:
            time.sleep(min(1.0, max(self._check / 4, 0.05)))
            for description, waited in self.stalled(time.monotonic()):
                print(f"{self._frontend}: stall: rank {self._rank} has waited {waited:.0f} s in {description} for the "
                      f"other ranks of the set ({CHECK_TIME}={self._check:g}); a rank that never joins fails "
                      f"it on every waiting rank after {SHUTDOWN_TIME} ({LIBRARY_TIMEOUT}), with an error "
                      "naming the rank waited for", file=self._out, flush=True)


def apply(environ=os.environ):
    """Before the library's communicator is made: the library settings of plan(environ)."""
    check, settings = plan(environ)
    environ.update(settings)
    return check
