"""The byte format of broadcast_object / allgather_object: Python objects, torch tensors inside.

Independent of torch.save/torch.load (and so of torch.load's `weights_only` default, True since
torch 2.6): objects are pickled with the standard pickle module; every dense tensor in them is
taken out of the pickle stream (a persistent id) and travels as its raw bytes after it, with its
dtype and shape in the pickle. One message:

    MAGIC (8 bytes) | pickle length (8, little endian) | pickle | tensor bytes, in id order

decode() reads exactly the bytes a peer sent and refuses a message that does not add up: a
wrong magic, a length past the end, a pickle that stops before its length or leaves bytes in it,
a persistent id that is not a tensor of this message, tensor data longer or shorter than its
dtype and shape say, or bytes left after the last tensor. The pickle itself is trusted as
Horovod trusts it (its object collectives unpickle with cloudpickle): the peers are ranks of the
same job, and an object is whatever they pickled. Tensors arrive on the CPU.
"""

import io
import math
import pickle
import struct

import torch

MAGIC = b"gjobj\x00\x01\x00"
_HEADER = struct.Struct("<8sQ")


class _Pickler(pickle.Pickler):
    def __init__(self, file, tensors):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._tensors = tensors
        self._ids = {}  # id(tensor) -> its persistent id: a tensor met twice is sent once

    def persistent_id(self, obj):
        if type(obj) not in (torch.Tensor, torch.nn.Parameter) or obj.layout != torch.strided \
                or obj.is_quantized or obj.device.type == "meta":
            return None  # pickled as torch pickles it (sparse, quantized, subclasses)
        pid = self._ids.get(id(obj))
        if pid is None:
            data = obj.detach().to("cpu").contiguous()
            self._tensors.append((obj, data))
            pid = ("tensor", len(self._tensors) - 1, str(data.dtype).split(".")[1], tuple(data.shape),
                   bool(obj.requires_grad), isinstance(obj, torch.nn.Parameter))
            self._ids[id(obj)] = pid
        return pid


def encode(obj):
    """The message for obj (bytes)."""
    tensors = []
    buf = io.BytesIO()
    _Pickler(buf, tensors).dump(obj)
    body = buf.getvalue()
    parts = [_HEADER.pack(MAGIC, len(body)), body]
    parts += [t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"" for _, t in tensors]
    return b"".join(parts)


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, data, offset, what):
        super().__init__(file)
        self._data, self._offset, self._what, self._next = data, offset, what, 0
        self._seen = []

    def persistent_load(self, pid):
        if isinstance(pid, tuple) and len(pid) == 6 and pid[0] == "tensor" and isinstance(pid[1], int) \
                and 0 <= pid[1] < self._next and pid == self._seen[pid[1]][0]:
            return self._seen[pid[1]][1]
        if not (isinstance(pid, tuple) and len(pid) == 6 and pid[0] == "tensor" and pid[1] == self._next):
            raise pickle.UnpicklingError(f"{self._what}: persistent id {pid!r:.80} is not the next tensor "
                                         f"(#{self._next}) of the message")
        _, _, dtype_name, shape, requires_grad, parameter = pid
        dtype = getattr(torch, dtype_name, None)
        if not isinstance(dtype, torch.dtype) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise pickle.UnpicklingError(f"{self._what}: tensor #{self._next} has dtype={dtype_name!r} "
                                         f"shape={shape!r}, not a torch dtype and a shape")
        nbytes = math.prod(shape) * torch.empty(0, dtype=dtype).element_size()
        end = self._offset + nbytes
        if end > len(self._data):
            raise pickle.UnpicklingError(f"{self._what}: tensor #{self._next} ({dtype_name}, shape {shape}) "
                                         f"needs {nbytes} bytes but the message has "
                                         f"{len(self._data) - self._offset} left")
        raw = bytearray(self._data[self._offset:end])
        self._offset, self._next = end, self._next + 1
        flat = torch.frombuffer(raw, dtype=torch.uint8) if nbytes else torch.empty(0, dtype=torch.uint8)
        t = flat.view(dtype).reshape(shape)
        if parameter:
            t = torch.nn.Parameter(t, requires_grad=requires_grad)
        elif requires_grad:
            t.requires_grad_(True)
        self._seen.append((pid, t))
        return t

    def finish(self):
        if self._offset != len(self._data):
            raise pickle.UnpicklingError(f"{self._what}: {len(self._data) - self._offset} bytes left after the "
                                         f"last tensor of the message")


def decode(data, what="decode"):
    """The object of one message (bytes-like); pickle.UnpicklingError naming what when the
    message does not add up (see the module docstring)."""
    data = memoryview(data).cast("B")
    if len(data) < _HEADER.size:
        raise pickle.UnpicklingError(f"{what}: a message of {len(data)} bytes is shorter than its "
                                     f"{_HEADER.size}-byte header")
    magic, body_len = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise pickle.UnpicklingError(f"{what}: the message starts with {bytes(magic)!r}, not gj's "
                                     f"{MAGIC!r} (a peer with another gj version?)")
    start, end = _HEADER.size, _HEADER.size + body_len
    if end > len(data):
        raise pickle.UnpicklingError(f"{what}: the header says {body_len} pickle bytes but the message "
                                     f"has {len(data) - start}")
    body = io.BytesIO(data[start:end])
    unpickler = _Unpickler(body, data, end, what)
    obj = unpickler.load()
    if body.tell() != body_len:
        raise pickle.UnpicklingError(f"{what}: the pickle ended after {body.tell()} of its {body_len} bytes")
    unpickler.finish()
    return obj
