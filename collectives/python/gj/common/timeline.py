"""Horovod's timeline: a Chrome trace (JSON, opened by chrome://tracing and Perfetto) of every
collective, one track per tensor name, written by rank 0.

Started by HOROVOD_TIMELINE=<file> at init() or by start_timeline(file_path), stopped by
stop_timeline() (or shutdown). Track names are Horovod's: "<operation>.<name>" for a tensor
given name=, "<operation>.noname.<n>" otherwise. Each call writes its phases on its track:
NEGOTIATE_<OP> (gj's agreement step: the small allreduce of the call's signature, and for
allgather/alltoall the exchange of the sizes), then <OP> from the moment the data request is
issued until gj sees it complete (synchronize, or a poll that reports it done). Rank 0
writes what rank 0 saw; the other ranks record nothing. gj has no negotiation cycle, so
mark_cycles / HOROVOD_TIMELINE_MARK_CYCLES write no CYCLE_START events.
"""

import contextvars
import functools
import inspect
import itertools
import json
import os
import threading
import time

from . import state

__all__ = ["start_timeline", "stop_timeline"]

ENV_FILE = "HOROVOD_TIMELINE"

_current_name = contextvars.ContextVar("gj_timeline_name", default=None)
_writer = None
_lock = threading.Lock()
_noname = itertools.count()


class _Writer:
    """The open trace file: a JSON array, one event per line, closed by close()."""

    def __init__(self, path):
        self.path = path
        try:
            self.file = open(path, "w")
        except OSError as e:
            raise ValueError(f"start_timeline: file_path={path!r} cannot be written: {e.strerror}") from None
        self.start_us = time.time_ns() // 1000
        self.t0 = time.perf_counter_ns()
        self.tracks = {}
        self.first = True
        self._write({"name": "process_name", "ph": "M", "pid": 0,
                     "args": {"name": state.frontend, "start_time_since_epoch_in_micros": self.start_us,
                              **state.notes}})

    def _write(self, event):
        self.file.write(("[\n" if self.first else ",\n") + json.dumps(event))
        self.first = False

    def now(self):
        return (time.perf_counter_ns() - self.t0) // 1000

    def track(self, name):
        pid = self.tracks.get(name)
        if pid is None:
            pid = self.tracks[name] = len(self.tracks) + 1
            self._write({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}})
            self._write({"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": pid}})
        return pid

    def event(self, name, phase, ph, ts=None):
        self._write({"name": phase, "ph": ph, "ts": self.now() if ts is None else ts, "pid": self.track(name),
                     "tid": 0})
        self.file.flush()

    def close(self):
        self.file.write("\n]\n" if not self.first else "[]\n")
        self.file.close()


def start_timeline(file_path, mark_cycles=False):
    """Starts writing the timeline to file_path (rank 0 writes; call it on every rank, as
    Horovod's). A running timeline is closed first. mark_cycles: accepted; gj has no cycles."""
    rank = state.world_of("start_timeline").rank
    if not isinstance(file_path, (str, os.PathLike)) or not str(file_path):
        raise ValueError(f"start_timeline: file_path={file_path!r} is not a file path")
    stop_timeline()
    if rank == 0:
        global _writer
        with _lock:
            _writer = _Writer(os.fspath(file_path))


def stop_timeline():
    """Closes the timeline file (valid JSON from then on); no-op when none is running."""
    global _writer
    with _lock:
        if _writer is not None:
            _writer.close()
            _writer = None


def start_from_environment(environ=os.environ):
    """init()'s part: HOROVOD_TIMELINE=<file> starts the timeline."""
    path = environ.get(ENV_FILE)
    if path:
        start_timeline(path, mark_cycles=environ.get("HOROVOD_TIMELINE_MARK_CYCLES", "") not in ("", "0"))


def active():
    return _writer is not None


def named(operation):
    """Decorator of a public collective taking Horovod's name= argument: the calls inside it
    record on the track "<operation>.<name>" (or "<operation>.noname.<n>")."""
    def wrap(fn):
        position = list(inspect.signature(fn).parameters).index("name")

        @functools.wraps(fn)
        def call(*args, **kwargs):
            if _writer is None or _current_name.get() is not None:
                return fn(*args, **kwargs)
            name = kwargs.get("name", args[position] if len(args) > position else None)
            track = f"{operation}.{name}" if name is not None else f"{operation}.noname.{next(_noname)}"
            token = _current_name.set((track, operation.upper()))
            try:
                return fn(*args, **kwargs)
            finally:
                _current_name.reset(token)
        return call
    return wrap


class naming:
    """Context manager: the calls inside record on the track "<operation>.<name>" (or
    "<operation>.noname.<n>"); what named() does, for a frontend whose calls run where no
    decorator sits (a graph's callback)."""

    def __init__(self, operation, name):
        self._operation, self._name, self._token = operation, name, None

    def __enter__(self):
        if _writer is not None and _current_name.get() is None:
            name, op = self._name, self._operation
            track = f"{op}.{name}" if name is not None else f"{op}.noname.{next(_noname)}"
            self._token = _current_name.set((track, op.upper()))

    def __exit__(self, *exc):
        if self._token is not None:
            _current_name.reset(self._token)
        return False


def _track():
    current = _current_name.get()
    return current if current is not None else (f"gj.noname.{next(_noname)}", "COLLECTIVE")


def negotiation():
    """Context manager around an agreement step of the current call."""
    return _Phase("NEGOTIATE_") if _writer is not None else _NOTHING


def issued():
    """The current call's data request was issued: returns a token for done()."""
    if _writer is None:
        return None
    track, op = _track()
    with _lock:
        if _writer is None:
            return None
        _writer.event(track, op, "B")
    return (track, op)


def done(token):
    if token is None:
        return
    with _lock:
        if _writer is not None:
            _writer.event(token[0], token[1], "E")


class _Phase:
    def __init__(self, prefix):
        self.track, op = _track()
        self.phase = prefix + op

    def __enter__(self):
        with _lock:
            if _writer is not None:
                _writer.event(self.track, self.phase, "B")

    def __exit__(self, *exc):
        with _lock:
            if _writer is not None:
                _writer.event(self.track, self.phase, "E")
        return False


class _Nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


_NOTHING = _Nothing()


class _Completion:
    """Placed last in a handle's request list: its test()/wait() run once every earlier request
    of the handle is complete, and mark the end of the call's <OP> phase (once)."""

    __slots__ = ("_token",)

    def __init__(self, token):
        self._token = token

    def test(self):
        self.wait()
        return True

    def wait(self):
        token, self._token = self._token, None
        done(token)


def completion(token):
    """The requests to append to a nonblocking call's list: [] when no timeline runs."""
    return [] if token is None else [_Completion(token)]
