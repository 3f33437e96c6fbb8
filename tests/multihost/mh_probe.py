#!/usr/bin/env python3
"""Python training script for the multi-host tests (scenario 8), launched by path.

Prints one line per rank: PYRANK <rank>/<size> host=<hostname> mpi4py=<yes|no>.
With mpi4py (Debian's python3-mpi4py) it also checks an allreduce of rank+1 against
n(n+1)/2 and rank 0 prints "PYALLREDUCE ok sum=<s> expected=<e>". Without mpi4py the rank
comes from Open MPI's OMPI_COMM_WORLD_RANK/SIZE, so the launch itself is still proven.
"""
import os
import socket
import sys

try:
    from mpi4py import MPI
except ImportError:
    MPI = None

if MPI is not None:
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
else:
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "-1"))
    size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "-1"))

print(f"PYRANK {rank}/{size} host={socket.gethostname()} mpi4py={'yes' if MPI else 'no'} "
      f"args={','.join(sys.argv[1:])}", flush=True)

if MPI is not None:
    total = comm.allreduce(rank + 1, op=MPI.SUM)
    expected = size * (size + 1) // 2
    if total != expected:
        print(f"PYALLREDUCE wrong on rank {rank}: sum={total} expected={expected}", file=sys.stderr, flush=True)
        comm.Abort(3)
    if rank == 0:
        print(f"PYALLREDUCE ok sum={total} expected={expected}", flush=True)
