"""HOROVOD_TIMELINE=<file> starts the timeline at init() and shutdown() closes it: run under
mpiexec -np 2 with the variable set; rank 0 parses the file after shutdown. Exit 0 when the file
is valid JSON with the named allreduce's track and phases, 1 otherwise."""

import json
import os
import sys

import torch

import gj.torch as hvd

hvd.init()
rank = hvd.rank()
hvd.allreduce(torch.ones(3), name="env_allreduce")
hvd.shutdown()
if rank == 0:
    with open(os.environ["HOROVOD_TIMELINE"]) as f:
        trace = json.load(f)
    names = {e["pid"]: e["args"]["name"] for e in trace if e.get("ph") == "M" and e["name"] == "process_name"}
    phases = [(e["ph"], e["name"]) for e in trace if e.get("ph") in ("B", "E") and names[e["pid"]] ==
              "allreduce.env_allreduce"]
    want = [("B", "NEGOTIATE_ALLREDUCE"), ("E", "NEGOTIATE_ALLREDUCE"), ("B", "ALLREDUCE"), ("E", "ALLREDUCE")]
    if phases != want:
        print(f"timeline {os.environ['HOROVOD_TIMELINE']}: phases {phases}, want {want}", file=sys.stderr)
        sys.exit(1)
    print("OK: HOROVOD_TIMELINE written by rank 0")
