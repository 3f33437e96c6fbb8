#!/usr/bin/env python3
"""A rank that never joins a collective (run at 2 ranks with HOROVOD_STALL_CHECK_TIME_SECONDS=1,
HOROVOD_STALL_SHUTDOWN_TIME_SECONDS=3): rank 0 warns once after 1 s naming the operation, then
fails with HorovodInternalError naming rank 1 after about 3 s instead of waiting for ever.
Exit 0 ok; 1 no error; 2 wrong error or timing; 3 no warning. Both ranks then shut down
(rank 1 after rank 0 gave up)."""

import io
import sys
import time

import torch

import gj.common.state
import gj.torch as hvd

hvd.init()
if hvd.rank() == 1:
    time.sleep(8)
    hvd.shutdown()
    sys.exit(0)
captured = io.StringIO()
gj.common.state.stall_watch._out = captured
start = time.monotonic()
code = 1
try:
    hvd.allreduce(torch.ones(4), name="never.joined")
    print("rank 0: FAIL: allreduce completed without rank 1", flush=True)
except hvd.HorovodInternalError as e:
    waited = time.monotonic() - start
    if "rank 1" not in str(e) or not 2.5 <= waited <= 7.5:
        print(f"rank 0: FAIL: after {waited:.1f} s (want ~3 s) got {e}", flush=True)
        code = 2
    elif "stall: rank 0 has waited 1 s in allreduce" not in captured.getvalue():
        print(f"rank 0: FAIL: no stall warning before the error; stderr had {captured.getvalue()!r}", flush=True)
        code = 3
    else:
        print(f"OK: rank 0 warned ({captured.getvalue().strip()[:60]}...), then failed after {waited:.1f} s: "
              f"{str(e)[:120]}", flush=True)
        code = 0
hvd.shutdown()
sys.exit(code)
