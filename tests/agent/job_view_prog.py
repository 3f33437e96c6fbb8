"""A rank program for job_view_tests.py, run under gj-mpirun (real mpiexec, 2 ranks).

Mode "stop": a stand-in for the collectives library (it speaks the rank socket,
GJ_RANK_MONITOR_FD, docs/collectives.md "Failure"): says `hello` and `stoppoll` (its program
polls gj.torch.stop_requested()), waits for the master's `stop`, prints `RANK r stop: <line>`,
shuts down (`leave`, `end`) and exits 0. Mode "stop-deaf": the same program that never polls
(no `stoppoll`); it waits for ever and the termination signal must end it at once.
Mode "metrics": says `set` and, every 0.2 s, a `prog` line with growing counters (as the
library's reporter does, faster) until the file argv[2] exists; then shuts down cleanly.
"""
import os
import socket
import sys
import time

rank = int(os.environ["RANK"])
mode = sys.argv[1]
lib = socket.socket(fileno=int(os.environ["GJ_RANK_MONITOR_FD"]))
lib.sendall(f"hello rank={rank} size={os.environ['WORLD_SIZE']}\n".encode())
if mode == "stop":
    lib.sendall(b"stoppoll\n")
print(f"RANK {rank} up", flush=True)


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


if mode == "metrics":
    size = int(os.environ["WORLD_SIZE"])
    lib.sendall(f"set id=w.0 size={size} ranks=0-{size - 1}\n".encode())
    n = 0
    while not os.path.exists(sys.argv[2]):
        n += 1
        lib.sendall(f"prog set=w.0 in={n} call=gjAllReduce done={n} dcall=gjAllReduce age=0 bytes={n * 4096} "
                    f"inms={n * (3 + rank)}\n".encode())
        time.sleep(0.2)
    lib.sendall(b"leave\n")
    print(f"RANK {rank} end: {read_until(b'end', 30)}", flush=True)
    sys.exit(0)

if mode == "stop":
    print(f"RANK {rank} stop: {read_until(b'stop', 60)}", flush=True)
    time.sleep(0.5)  # "saving a checkpoint"
    lib.sendall(b"leave\n")
    print(f"RANK {rank} end: {read_until(b'end', 30)}", flush=True)
    sys.exit(0)
time.sleep(600)
