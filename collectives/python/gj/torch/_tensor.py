"""Torch tensors as the library sees them: (data pointer, element count, gj dtype, stream).

CUDA tensors pass their device pointer and torch's current stream on their device straight to
the library (its NCCL backend); nothing is copied to the host.
"""

import ctypes

import torch

from .. import _lib
from ..common import agreement as _agreement

DTYPES = {
    torch.float32: _lib.FLOAT32, torch.float64: _lib.FLOAT64, torch.float16: _lib.FLOAT16,
    torch.bfloat16: _lib.BFLOAT16, torch.int32: _lib.INT32, torch.int64: _lib.INT64,
    torch.uint8: _lib.UINT8, torch.int8: _lib.INT8, torch.int16: _lib.INT16, torch.bool: _lib.BOOL,
}
REDUCIBLE = [d for d, c in DTYPES.items() if c < _lib.NUM_REDUCIBLE]
_agreement.DTYPE_CODES.update({str(d): c for d, c in DTYPES.items()})


def signature(tensor):
    """What a blocking call's agreement compares of a tensor argument (gj/common/agreement.py)."""
    return (("dtype", str(tensor.dtype)), ("shape", tuple(tensor.shape)), ("device", tensor.device.type))


def check_tensor(tensor, what, name="tensor", reduce=False):
    """Validates a tensor argument; returns its gj dtype code."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{what}: {name} must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.is_sparse:
        raise TypeError(f"{what}: {name} is a sparse tensor; pass tensor.to_dense()")
    code = DTYPES.get(tensor.dtype)
    if code is None:
        raise TypeError(f"{what}: {name}.dtype={tensor.dtype} is not supported; supported: "
                        f"{', '.join(str(d) for d in DTYPES)}")
    if reduce and code >= _lib.NUM_REDUCIBLE:
        raise TypeError(f"{what}: {name}.dtype={tensor.dtype} cannot be reduced by gj (data movement "
                        f"only); reducible: {', '.join(str(d) for d in REDUCIBLE)}")
    if tensor.device.type not in ("cpu", "cuda"):
        raise TypeError(f"{what}: {name}.device={tensor.device} is neither cpu nor cuda")
    if tensor.is_cuda and not _lib.capabilities() & _lib.CAP_NCCL:
        raise _lib.GjError(what, _lib.UNSUPPORTED,
                           f"{name} is a CUDA tensor but the library {_lib.library_path} was built "
                           "without NCCL; rebuild it with -DGJ_WITH_NCCL=ON (and CUDA)")
    # torch's CUDA runtime may run where the library's cannot (an older driver than the toolkit
    # gj was built with): the tensor's own device says it is device memory, so the call is
    # refused here, before the library could be handed a pointer it cannot classify.
    if tensor.is_cuda and _lib.device_problem():
        raise _lib.GjError(what, _lib.CUDA_ERROR, f"{name} is a CUDA tensor ({tensor.device}), but "
                           f"{_lib.device_problem()}")
    return code


def require_contiguous(tensor, what, name="tensor"):
    if not tensor.is_contiguous():
        raise ValueError(f"{what}: {name} (shape {tuple(tensor.shape)}, strides {tensor.stride()}) is "
                         f"not contiguous; an in-place operation needs {name}.contiguous() copied back")


def ptr(tensor):
    return tensor.data_ptr() if tensor.numel() else None


def stream(tensor):
    """torch's current CUDA stream on the tensor's device (as a cudaStream_t), None on CPU."""
    if not tensor.is_cuda:
        return None
    return ctypes.c_void_p(torch.cuda.current_stream(tensor.device).cuda_stream)


def same_device(tensors, what):
    devices = {t.device for t in tensors}
    if len(devices) > 1:
        raise ValueError(f"{what}: tensors on several devices {sorted(map(str, devices))}; one call "
                         "takes tensors of one device")
