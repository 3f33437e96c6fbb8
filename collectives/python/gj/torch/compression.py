"""Gradient compression for the wire (Horovod's Compression.none / Compression.fp16): the rules
are gj/common/compression.py's, on torch tensors."""

import torch

from ..common.compression import Compressor, NoneCompressor, fp16_compressor

__all__ = ["Compressor", "NoneCompressor", "FP16Compressor", "Compression"]

FP16Compressor = fp16_compressor(lambda dtype: dtype.is_floating_point, lambda t, dtype: t.to(dtype), torch.float16)


class Compression:
    none = NoneCompressor
    fp16 = FP16Compressor
