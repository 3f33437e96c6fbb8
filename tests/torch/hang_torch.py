"""gj.torch under gj-mpirun (real mpiexec, 2 ranks, real rank wrappers and job monitor) for
tests/agent/job_view_tests.py (docs/agent.md "Hangs"). Both ranks allreduce; before its 5th
allreduce one rank stops coming, the way argv[1] says:

  blocked   rank 1 sleeps in a function of its own, stuck_in_data_loader (a stuck data loader)
  sigstop   rank 1 stops itself with SIGSTOP (a frozen process)
  phase     rank 0 alone in a long phase without collectives (checkpoint_alone, argv[2] seconds),
            then both go on and shut down cleanly

Each rank prints `RANK r step i` as it goes and `RANK r done` at a clean end.
"""
import os
import signal
import sys
import time

import torch

import gj.torch as hvd

how = sys.argv[1]
hvd.init()
rank = hvd.rank()


def stuck_in_data_loader():
    time.sleep(3600)


def checkpoint_alone(seconds):
    time.sleep(seconds)


for i in range(8):
    if i == 4 and how == "blocked" and rank == 1:
        stuck_in_data_loader()
    if i == 4 and how == "sigstop" and rank == 1:
        time.sleep(1.5)  # progress goes up once a second: the master has heard of step 3 first
        os.kill(os.getpid(), signal.SIGSTOP)
    if i == 4 and how == "phase" and rank == 0:
        checkpoint_alone(float(sys.argv[2]))
    hvd.allreduce(torch.ones(256), name=f"step.{i}")
    print(f"RANK {rank} step {i}", flush=True)
hvd.shutdown()
print(f"RANK {rank} done", flush=True)
