"""Gradient compression (Horovod's Compression.none / Compression.fp16): the rules are
gj/common/compression.py's, on TensorFlow tensors."""

import tensorflow as tf

from ..common.compression import Compressor, NoneCompressor, fp16_compressor

__all__ = ["Compressor", "NoneCompressor", "FP16Compressor", "Compression"]

FP16Compressor = fp16_compressor(lambda dtype: dtype.is_floating, tf.cast, tf.float16)


class Compression:
    none = NoneCompressor
    fp16 = FP16Compressor
