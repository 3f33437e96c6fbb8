"""A rank program for job_view_tests.py, run under gj-mpirun (real mpiexec, 2 ranks).

Mode "stop": a stand-in for the collectives library (it speaks the rank socket,
GJ_RANK_MONITOR_FD, docs/collectives.md "Failure"): says `hello` and `stoppoll` (its program
polls gj.torch.stop_requested()), waits for the master's `stop`, prints `RANK r stop: <line>`,
shuts down (`leave`, `end`) and exits 0. Mode "stop-deaf": the same program that never polls
(no `stoppoll`); it waits for ever and the termination signal must end it at once.
Mode "metrics": says `set` and, every 0.2 s, a `prog` line with growing counters (as the
library's reporter does, faster) until the file argv[2] exists; then shuts down cleanly. With
FAKE_NVML_PROCS (tests/agent/fake_nvml.c) it first writes <that folder>/<its pid> holding
(rank+1) * 1000000: the fake NVML lists it on device 0 with those bytes.
Mode "nccl": a stand-in for NCCL 2.x writing its INIT/NET lines into NCCL_DEBUG_FILE (the file
gj's rank environment names); prints `RANK r nccl <path>`. Rank 0 writes IB on mlx5_0 at once,
stays 3 s (the job's work) and deletes its file before it exits: only a wrapper that read the file
while the program ran reports it. Rank 1 writes TCP sockets just before it exits: only the
wrapper's read at the program's end reports it.
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
    if os.environ.get("FAKE_NVML_PROCS"):  # the fake NVML lists this process with (rank+1) MB
        with open(os.path.join(os.environ["FAKE_NVML_PROCS"], str(os.getpid())), "w") as f:
            f.write(str((rank + 1) * 1000000))
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

if mode == "nccl":
    path = os.environ.get("NCCL_DEBUG_FILE", "")
    print(f"RANK {rank} nccl {path}", flush=True)
    pre = f"{socket.gethostname()}:{os.getpid()}:{os.getpid()} [0] NCCL INFO "
    ib = (f"{pre}NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>\n{pre}Using network IB\n"
          f"{pre}NCCL version 2.18.5+cuda12.2\n")
    sock = f"{pre}NET/Socket : Using [0]eth0:10.0.0.1<0>\n{pre}Using network Socket\n"
    if rank == 0 and path:
        with open(path, "w") as f:
            f.write(ib)
    time.sleep(3)
    if rank == 0 and path:
        os.unlink(path)
    if rank == 1 and path:
        with open(path, "w") as f:
            f.write(sock)
    lib.sendall(b"leave\n")
    read_until(b"end", 30)
    sys.exit(0)

if mode == "stop":
    print(f"RANK {rank} stop: {read_until(b'stop', 60)}", flush=True)
    time.sleep(0.5)  # "saving a checkpoint"
    lib.sendall(b"leave\n")
    print(f"RANK {rank} end: {read_until(b'end', 30)}", flush=True)
    sys.exit(0)
time.sleep(600)
