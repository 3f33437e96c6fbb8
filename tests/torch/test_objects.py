"""The message format of broadcast_object / allgather_object (gj/torch/_objects.py), no MPI:
round trips on every torch version without torch.save/torch.load, and refusal of every
message that does not add up."""

import pickle
import struct

import pytest
import torch

from gj.torch import _objects

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64,
          torch.uint8, torch.int8, torch.int16, torch.bool, torch.complex64]


@pytest.fixture
def no_torch_serialization(monkeypatch):
    """torch.save/torch.load (whose weights_only default changed in 2.6) must not be used."""
    def refuse(*_, **__):
        raise AssertionError("torch.save/torch.load called")
    monkeypatch.setattr(torch, "save", refuse)
    monkeypatch.setattr(torch, "load", refuse)


def _values(dtype, shape):
    return (torch.arange(int(torch.Size(shape).numel())) % 7).reshape(shape).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_tensors_of_every_dtype_round_trip_bitwise(dtype, no_torch_serialization):
    for shape in [(), (0,), (5,), (2, 3, 4)]:
        t = _values(dtype, shape)
        got = _objects.decode(_objects.encode({"t": t}))["t"]
        assert got.dtype == dtype and got.shape == t.shape and torch.equal(got, t), (dtype, shape)


def test_optimizer_state_dict_round_trips(no_torch_serialization):
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, betas=(0.8, 0.9))
    model(torch.ones(4, 3)).sum().backward()
    opt.step()
    state = opt.state_dict()
    got = _objects.decode(_objects.encode(state))
    assert got["param_groups"] == state["param_groups"]
    for k, s in state["state"].items():
        assert set(got["state"][k]) == set(s)
        for name, v in s.items():
            assert torch.equal(got["state"][k][name], v) and got["state"][k][name].dtype == v.dtype, name
    opt2 = torch.optim.Adam(torch.nn.Linear(3, 2).parameters())
    opt2.load_state_dict(got)


def test_views_parameters_and_shared_tensors_keep_what_matters(no_torch_serialization):
    base = torch.arange(12.0).reshape(3, 4)
    p = torch.nn.Parameter(torch.ones(2))
    got = _objects.decode(_objects.encode([base.t(), p, base, base, torch.ones(1, requires_grad=True)]))
    assert torch.equal(got[0], base.t()) and got[0].is_contiguous()
    assert isinstance(got[1], torch.nn.Parameter) and got[1].requires_grad
    assert got[2] is got[3], "a tensor met twice arrives as one tensor"
    assert got[4].requires_grad and not isinstance(got[4], torch.nn.Parameter)


def test_plain_objects_round_trip(no_torch_serialization):
    obj = {"a": [1, 2.5, None, "x" * 1000], "b": (b"\0\1", {3, 4}), "c": torch.float16}
    assert _objects.decode(_objects.encode(obj)) == obj


def _message(body, tail=b""):
    return struct.pack("<8sQ", _objects.MAGIC, len(body)) + body + tail


class _Forged:
    """Pickles to a persistent id that names a tensor the message does not carry."""

    def __init__(self, pid):
        self.pid = pid


class _ForgingPickler(pickle.Pickler):
    def persistent_id(self, obj):
        return obj.pid if isinstance(obj, _Forged) else None


def _forged(pid):
    import io
    buf = io.BytesIO()
    _ForgingPickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump([_Forged(pid)])
    return buf.getvalue()


@pytest.mark.parametrize("case, message, error", [
    ("short", b"gjobj", "shorter than its 16-byte header"),
    ("magic", b"notgj\0\0\0" + b"\0" * 8, "not gj's"),
    ("length past the end", struct.pack("<8sQ", _objects.MAGIC, 100) + pickle.dumps(1), "says 100 pickle bytes"),
    ("bytes inside the pickle's length", _message(pickle.dumps(1) + b"junk"), "pickle ended after"),
    ("bytes after the last tensor", _objects.encode(torch.ones(2)) + b"\0", "1 bytes left after"),
    ("truncated tensor", _objects.encode(torch.ones(4))[:-1], "needs 16 bytes but the message has 15"),
    ("forged id", _message(_forged(("tensor", 3, "float32", (1,), False, False))), "not the next tensor"),
    ("forged dtype", _message(_forged(("tensor", 0, "Tensor", (1,), False, False))), "not a torch dtype"),
    ("forged shape", _message(_forged(("tensor", 0, "float32", (-1,), False, False))), "not a torch dtype"),
    ("other id", _message(_forged("os.system")), "not the next tensor"),
])
def test_a_message_that_does_not_add_up_is_refused(case, message, error):
    with pytest.raises(pickle.UnpicklingError, match=error):
        _objects.decode(message, "broadcast_object")


def test_decode_reads_only_its_slice():
    """allgather_object decodes slices of one buffer: a message followed by another decodes
    only when cut exactly."""
    a, b = _objects.encode({"a": torch.ones(3)}), _objects.encode("b")
    joined = memoryview(a + b)
    assert torch.equal(_objects.decode(joined[:len(a)])["a"], torch.ones(3))
    assert _objects.decode(joined[len(a):]) == "b"
    with pytest.raises(pickle.UnpicklingError):
        _objects.decode(joined)
