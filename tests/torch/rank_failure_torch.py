"""gj.torch under gj-mpirun (real mpiexec, 2 ranks, real rank wrappers and job monitor): rank 1
leaves after the first allreduce the way argv[1] says (exit3: sys.exit(3); exit0: sys.exit(0)
early; raise: an exception; sigkill: SIGKILL) while rank 0 keeps allreducing. Rank 0 must get
HorovodInternalError naming rank 1 and its host; it prints `RAISED <time> <message>` and fails
(exit 1) as a training script would. Judged by tests/agent/rank_failure_tests.py (torch-* cases)."""
import os
import signal
import sys
import time

import torch

import gj.torch as hvd

how = sys.argv[1]
hvd.init()
hvd.allreduce(torch.ones(4), name="first")
if hvd.rank() == 1:
    time.sleep(0.5)  # rank 0 is in its allreduces
    print("rank 1 line before leaving", file=sys.stderr, flush=True)
    if how == "exit3":
        sys.exit(3)
    if how == "exit0":
        sys.exit(0)
    if how == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    raise RuntimeError("boom in rank 1")
try:
    for i in range(1000000):
        hvd.allreduce(torch.ones(1024), name=f"step.{i}")
    print("rank 0: every allreduce completed without rank 1", flush=True)
except hvd.HorovodInternalError as e:
    print(f"RAISED {time.time():.3f} {e}", flush=True)
    raise
