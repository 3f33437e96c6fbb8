"""A rank program for rank_failure_tests.py, run under gj-mpirun (real mpiexec, 2 ranks).

Rank 1 leaves the job the way argv[1] says. Rank 0 stands in for the collectives library: it
speaks the rank socket (GJ_RANK_MONITOR_FD, docs/collectives.md "Failure"), waits for `lost`,
prints `STANDIN lost <line> at <time>` and, as the library would, reports `fail kind=peer-lost`
and exits 1. Mode "...-plain": rank 0 is a program without the library that would wait forever.
Mode "ok": both ranks shut down (`leave`), wait for `end status=ok` and exit 0.
"""
import ctypes
import os
import signal
import socket
import sys
import time

rank = int(os.environ["RANK"])
mode = sys.argv[1]
plain = mode.endswith("-plain")
mode = mode.removesuffix("-plain")
fd = os.environ.get("GJ_RANK_MONITOR_FD")
lib = socket.socket(fileno=int(fd)) if fd else None
if lib is not None and not (plain and rank == 0):
    lib.sendall(f"hello rank={rank} size={os.environ['WORLD_SIZE']}\n".encode())
print(f"RANK {rank} up monitor_fd={fd} restart={os.environ.get('GJ_RESTART_COUNT')}/"
      f"{os.environ.get('TORCHELASTIC_RESTART_COUNT')}/{os.environ.get('TORCHELASTIC_MAX_RESTARTS')}", flush=True)


def read_until(word, timeout):
    lib.settimeout(timeout)
    buf = b""
    while True:
        for line in buf.split(b"\n")[:-1]:
            if line.startswith(word):
                return line.decode()
        chunk = lib.recv(4096)
        if not chunk:
            return None
        buf += chunk


if mode == "ok":
    time.sleep(0.5)
    lib.sendall(b"leave\n")
    print(f"RANK {rank} end: {read_until(b'end', 30)}", flush=True)
    sys.exit(0)

if rank == 1:
    time.sleep(1.0)
    print("rank 1 line before leaving", file=sys.stderr, flush=True)
    if mode == "exit3":
        sys.exit(3)
    if mode == "exit0":
        sys.exit(0)  # without shutdown: its peers would wait for it
    if mode == "raise":
        raise RuntimeError("boom in rank 1")
    if mode == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "sigsegv":
        ctypes.string_at(0)
    if mode == "oom":
        chunks = []
        while True:  # the cgroup's memory.max ends this
            chunks.append(bytearray(64 << 20))
    sys.exit(99)

if plain:
    time.sleep(600)
    sys.exit(0)
line = read_until(b"lost", 60)
print(f"STANDIN lost {line} at {time.time():.3f}", flush=True)
lib.sendall(f"fail kind=peer-lost reason={line}\n".encode())
sys.exit(1)
