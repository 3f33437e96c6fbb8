#!/usr/bin/env python3
"""Runs a training script (the seed's Horovod script on gj.torch) unchanged in this process, then
proves on every rank that the model's weights are bitwise identical across ranks and differ from
the initial (broadcast) weights.

    gj-mpirun seed_check.py ../../examples/python/horovod_seed.py
The script must call hvd.broadcast_parameters(model.state_dict(), ...) once and leave its model
in the global `model`. Exit 0 ok, 1 weights differ across ranks, 3 training left them unchanged.
"""

import hashlib
import runpy
import sys

import gj.torch as hvd

initial = {}
_broadcast_parameters = hvd.broadcast_parameters


def recording_broadcast_parameters(params, root_rank, *args, **kwargs):
    _broadcast_parameters(params, root_rank, *args, **kwargs)
    items = sorted(params.items()) if isinstance(params, dict) else list(params)
    initial.update({name: t.detach().clone() for name, t in items})


hvd.broadcast_parameters = recording_broadcast_parameters


def digest(state):
    h = hashlib.blake2b(digest_size=16)
    for name, t in sorted(state.items()):
        h.update(name.encode())
        h.update(t.detach().cpu().contiguous().view(-1).view(dtype=__import__("torch").uint8).numpy().tobytes())
    return h.hexdigest()


def main(script):
    sys.argv = [script]
    g = runpy.run_path(script, run_name="__main__")
    final = g["model"].state_dict()
    rank, size = hvd.rank(), hvd.size()
    digests = hvd.allgather_object(digest(final))
    changed = [n for n, t in final.items() if not __import__("torch").equal(t.cpu(), initial[n].cpu())]
    if len(set(digests)) != 1:
        print(f"rank {rank}: FAIL: weights differ across ranks after training: {digests}", file=sys.stderr)
        return 1
    if not initial or not changed:
        print(f"rank {rank}: FAIL: training left the broadcast weights unchanged", file=sys.stderr)
        return 3
    if rank == 0:
        print(f"OK: weights bitwise identical on all {size} ranks ({digests[0]}), "
              f"{len(changed)} of {len(final)} tensors changed by training")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
