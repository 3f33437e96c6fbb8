"""The timeline under mpiexec (np 2 and 3): start_timeline/stop_timeline around real collectives,
then rank 0 parses its Chrome trace: valid JSON, one track per tensor name (Horovod's
"<operation>.<name>"), each call's NEGOTIATE_<OP> and <OP> phases begun and ended in order; the
other ranks write nothing. HOROVOD_TIMELINE at init is timeline_env_check.py (torch.timeline.env)."""

import json
import os

import torch

import gj.torch as hvd


def _events(path):
    with open(path) as f:
        trace = json.load(f)
    names = {e["pid"]: e["args"]["name"] for e in trace if e.get("ph") == "M" and e["name"] == "process_name"}
    tracks = {}
    for e in trace:
        if e.get("ph") in ("B", "E"):
            tracks.setdefault(names[e["pid"]], []).append((e["ph"], e["name"], e["ts"]))
    return trace, tracks


def _phases(events):
    return [(ph, name) for ph, name, _ in events]


def test_timeline_records_each_tensor_and_phase(world, tmp_path):
    r, n = world
    path = str(tmp_path / f"timeline.{r}.json")
    hvd.start_timeline(path)
    hvd.allreduce(torch.tensor([1.0, 2.0, 3.0]), name="test_allreduce")
    handle = hvd.allreduce_async(torch.ones(4), name="grad.w")
    assert hvd.synchronize(handle).tolist() == [1.0] * 4
    hvd.broadcast(torch.ones(2), root_rank=0, name="weights")
    hvd.allgather(torch.ones(r + 1, 2), name="rows")
    hvd.alltoall(torch.arange(n, dtype=torch.float32), name="route")
    hvd.allreduce(torch.ones(1))
    hvd.stop_timeline()
    hvd.barrier()
    if r != 0:
        assert not os.path.exists(path), "only rank 0 writes the timeline"
        return
    trace, tracks = _events(path)
    assert trace[0]["args"]["start_time_since_epoch_in_micros"] > 0
    done = [("B", "NEGOTIATE_{}"), ("E", "NEGOTIATE_{}"), ("B", "{}"), ("E", "{}")]
    for track, op in (("allreduce.test_allreduce", "ALLREDUCE"), ("allreduce.grad.w", "ALLREDUCE"),
                      ("broadcast.weights", "BROADCAST"), ("allgather.rows", "ALLGATHER")):
        assert _phases(tracks[track]) == [(ph, name.format(op)) for ph, name in done], (track, tracks[track])
    # alltoall: the agreement and the splits exchange are two negotiation steps.
    assert _phases(tracks["alltoall.route"])[-2:] == [("B", "ALLTOALL"), ("E", "ALLTOALL")]
    assert [p for p in _phases(tracks["alltoall.route"]) if p[1] == "NEGOTIATE_ALLTOALL"] == \
        [("B", "NEGOTIATE_ALLTOALL"), ("E", "NEGOTIATE_ALLTOALL")] * 2
    unnamed = [t for t in tracks if t.startswith("allreduce.noname.")]
    assert len(unnamed) == 1
    for events in tracks.values():
        stamps = [ts for _, _, ts in events]
        assert stamps == sorted(stamps)


def test_restart_writes_a_new_file_and_stop_is_idempotent(world, tmp_path):
    r, n = world
    first, second = str(tmp_path / f"a.{r}.json"), str(tmp_path / f"b.{r}.json")
    hvd.start_timeline(first)
    hvd.allreduce(torch.ones(1), name="one")
    hvd.start_timeline(second)  # closes the first
    hvd.allreduce(torch.ones(1), name="two")
    hvd.stop_timeline()
    hvd.stop_timeline()
    hvd.allreduce(torch.ones(1), name="three")  # after stop: not recorded
    if r == 0:
        assert set(_events(first)[1]) == {"allreduce.one"}
        assert set(_events(second)[1]) == {"allreduce.two"}


def test_bad_path_names_it(world):
    r, n = world
    if r == 0:
        try:
            hvd.start_timeline("/nonexistent-dir/t.json")
        except ValueError as e:
            assert "/nonexistent-dir/t.json" in str(e)
        else:
            raise AssertionError("start_timeline accepted an unwritable path")
