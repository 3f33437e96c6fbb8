#!/usr/bin/env python3
"""A rank that leaves while rank 0 keeps allreducing, each rank under the rank wrapper's test
double (gj_rank_monitor_double: GJ_RANK_MONITOR_FD, `lost` as gj-mpirun's wrapper sends it):
rank 0's allreduce raises HorovodInternalError naming rank 1 and its host within 2 s of the
wrapper's `lost`, and the next one raises at once.
  peer_lost_check.py exit3|sigkill|raise
exit3: rank 1 calls sys.exit(3) (its exit hook shuts gj.torch down first: it left the job);
sigkill: rank 1 SIGKILLs itself; raise: rank 1 raises (the exit hook aborts, the program exits 1).
Rank 0 prints OK and exits 0; any other outcome prints FAIL and exits 1."""

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
    time.sleep(0.3)  # rank 0 is in its allreduce
    if how == "exit3":
        sys.exit(3)
    if how == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    raise RuntimeError("rank 1 fails on purpose")

start = time.monotonic()
failures = []
try:
    for i in range(100000):
        hvd.allreduce(torch.ones(1024), name=f"step.{i}")
    failures.append("every allreduce completed without rank 1")
except hvd.HorovodInternalError as e:
    failed_at = time.monotonic()
    message = str(e)
    print(f"rank 0: {message}", flush=True)
    if "rank 1 (host pod-1) left the job" not in message:
        failures.append(f"the error does not name rank 1 and its host: {message}")
    path = os.path.join(os.environ["GJ_TEST_DOUBLE_DIR"], "sent_at.0.1")
    for _ in range(200):
        if os.path.exists(path):
            break
        time.sleep(0.01)
    with open(path) as f:
        took = failed_at * 1000 - int(f.read())
    print(f"rank 0: failed {took:.0f} ms after its wrapper's `lost`", flush=True)
    if took > 2000:
        failures.append(f"failed {took:.0f} ms after the wrapper's `lost`, bound 2000 ms")
    again = time.monotonic()
    try:
        hvd.allreduce(torch.ones(4), name="after")
        failures.append("the allreduce after the failure completed")
    except hvd.HorovodInternalError:
        if time.monotonic() - again > 0.5:
            failures.append("the allreduce after the failure did not fail at once")
if failures:
    print("rank 0: FAIL: " + "; ".join(failures), flush=True)
    os._exit(1)
print(f"OK: rank 0 raised HorovodInternalError naming rank 1 ({how})", flush=True)
os._exit(0)  # a failing job's survivor: no collective shutdown with a peer gone
