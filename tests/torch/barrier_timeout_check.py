#!/usr/bin/env python3
"""A barrier one rank never reaches (run at 2 ranks with HOROVOD_STALL_SHUTDOWN_TIME_SECONDS=2):
rank 0 fails with HorovodInternalError naming GJ_COLL_TIMEOUT_MS after about 2 s instead of
waiting for ever, and its next barrier is refused, naming why (a control collective cannot be
cancelled, so the set's control channel stays stopped). Both ranks then shut down. Exit 0 ok;
1 no error; 2 wrong error or timing; 3 the next barrier was not refused."""

import sys
import time

import gj.torch as hvd

hvd.init()
if hvd.rank() == 1:
    time.sleep(4)
    hvd.shutdown()
    sys.exit(0)
code = 1
start = time.monotonic()
try:
    hvd.barrier()
    print("rank 0: FAIL: the barrier completed without rank 1", flush=True)
except hvd.HorovodInternalError as e:
    waited = time.monotonic() - start
    if "GJ_COLL_TIMEOUT_MS" not in str(e) or not 1.5 <= waited <= 4.5:
        print(f"rank 0: FAIL: after {waited:.1f} s (want ~2 s) got {e}", flush=True)
        code = 2
    else:
        try:
            hvd.barrier()
            print("rank 0: FAIL: a barrier after the timeout was accepted", flush=True)
            code = 3
        except hvd.HorovodInternalError as again:
            if "control channel stopped" not in str(again):
                print(f"rank 0: FAIL: the second barrier: {again}", flush=True)
                code = 3
            else:
                print(f"OK: rank 0's barrier failed after {waited:.1f} s: {str(e)[:160]}", flush=True)
                code = 0
hvd.shutdown()
sys.exit(code)
