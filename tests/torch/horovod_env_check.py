"""Horovod's environment variables at init() under mpiexec (run at 2 ranks).

map: run with HOROVOD_FUSION_THRESHOLD=1024 (and GJ_COLL_FUSION_BYTES=1K: the same value, no
  conflict), HOROVOD_LOG_LEVEL=info, HOROVOD_HIERARCHICAL_ALLREDUCE=0, HOROVOD_LOG_HIDE_TIME=1
  (honoured) and HOROVOD_CYCLE_TIME, HOROVOD_AUTOTUNE, HOROVOD_GJ_UNKNOWN (not): the optimizer's
  buckets hold at most 1024 bytes, the library's fusion buffer is 1024 bytes, its info lines
  appear, and rank 0 alone prints one line naming exactly the three not honoured.
conflict: run with HOROVOD_FUSION_THRESHOLD=1024 and GJ_TORCH_BUCKET_BYTES=4096: init() raises
  ValueError naming both values on every rank (and for HOROVOD_HIERARCHICAL_ALLREDUCE=1 against
  GJ_COLL_HIERARCHICAL=0), and with the conflict on rank 1 only (rank 1 names it, rank 0 names
  rank 1); with the GJ_ setting removed, init() succeeds and the plan follows
  HOROVOD_FUSION_THRESHOLD.
"""

import os
import sys
import tempfile

import torch

import gj.torch as hvd
from gj.common import state as _state

LINE = "gj.torch: HOROVOD_* variables set but not honoured by gj: "


def model_buckets():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Linear(16, 8))  # 1024, 64, 512, 32 bytes
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    return opt._buckets


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr, flush=True)
    sys.exit(1)


def check_map():
    # Capture this rank's fd 2 around init(): the library's log lines and gj.torch's line.
    captured = tempfile.TemporaryFile(mode="w+")
    saved = os.dup(2)
    sys.stderr.flush()
    os.dup2(captured.fileno(), 2)
    try:
        hvd.init()
        buckets = model_buckets()
        fusion = _state.world.fusion_threshold
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
    captured.seek(0)
    text = captured.read()
    rank = hvd.rank()
    lines = [ln for ln in text.splitlines() if ln.startswith("gj.torch: HOROVOD_")]
    if buckets != [[3, 2, 1], [0]]:
        fail(f"rank {rank}: buckets {buckets}, want [[3, 2, 1], [0]] for HOROVOD_FUSION_THRESHOLD=1024")
    if fusion != 1024:
        fail(f"rank {rank}: library fusion threshold {fusion}, want 1024")
    if os.environ.get("GJ_COLL_HIERARCHICAL") != "0":
        fail(f"rank {rank}: GJ_COLL_HIERARCHICAL={os.environ.get('GJ_COLL_HIERARCHICAL')!r}, want '0'")
    if f"gj-coll[{rank}] info: communicator ready" not in text:
        fail(f"rank {rank}: no library info line for HOROVOD_LOG_LEVEL=info in {text!r}")
    if rank == 0:
        if len(lines) != 1 or not lines[0].startswith(LINE):
            fail(f"rank 0 printed {lines}, want one line starting {LINE!r}")
        names = lines[0][len(LINE):].split(" (")[0].split(", ")
        if names != ["HOROVOD_AUTOTUNE", "HOROVOD_CYCLE_TIME", "HOROVOD_GJ_UNKNOWN"]:
            fail(f"rank 0 named {names}")
    elif lines:
        fail(f"rank {rank} printed {lines}; only rank 0 prints")
    hvd.allreduce(torch.ones(1))  # every rank got here
    if rank == 0:
        print(f"OK: HOROVOD_* mapped at init; rank 0 printed: {lines[0]}", flush=True)


def refused(want):
    rank = os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "?"))
    try:
        hvd.init()
    except ValueError as e:
        if not all(w in str(e) for w in want):
            fail(f"rank {rank}: {e} does not name {want}")
        print(f"OK: rank {rank} refused: {e}", flush=True)
    else:
        fail(f"rank {rank}: init() accepted {want}")


def check_conflict():
    refused(("HOROVOD_FUSION_THRESHOLD='1024'", "GJ_TORCH_BUCKET_BYTES='4096'"))
    del os.environ["GJ_TORCH_BUCKET_BYTES"]
    os.environ.update(HOROVOD_HIERARCHICAL_ALLREDUCE="1", GJ_COLL_HIERARCHICAL="0")
    refused(("HOROVOD_HIERARCHICAL_ALLREDUCE='1'", "GJ_COLL_HIERARCHICAL='0'"))
    del os.environ["GJ_COLL_HIERARCHICAL"]
    # A conflict on one rank only: that rank names it, every other names that rank; none waits.
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0")))
    if rank == 1:
        os.environ["GJ_TORCH_BUCKET_BYTES"] = "4096"
        refused(("HOROVOD_FUSION_THRESHOLD='1024'", "GJ_TORCH_BUCKET_BYTES='4096'"))
        del os.environ["GJ_TORCH_BUCKET_BYTES"]
    else:
        refused(("settings of rank(s) [1] were refused",))
    hvd.init()
    if model_buckets() != [[3, 2, 1], [0]]:
        fail("after the conflicts were removed the plan does not follow HOROVOD_FUSION_THRESHOLD")
    print(f"OK: rank {hvd.rank()} initialized once the conflicts were removed", flush=True)


if __name__ == "__main__":
    {"map": check_map, "conflict": check_conflict}[sys.argv[1]]()
