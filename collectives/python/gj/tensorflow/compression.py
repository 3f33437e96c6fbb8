"""Gradient compression (Horovod's Compression): none, or fp16 on the wire for floating tensors."""

import tensorflow as tf


class Compressor:
    @staticmethod
    def compress(tensor):
        """(the tensor to send, what decompress needs)."""
        raise NotImplementedError

    @staticmethod
    def decompress(tensor, ctx):
        raise NotImplementedError


class NoneCompressor(Compressor):
    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class FP16Compressor(Compressor):
    """Floating tensors travel as float16 and come back in their dtype; others unchanged."""

    @staticmethod
    def compress(tensor):
        if tensor.dtype.is_floating and tensor.dtype != tf.float16:
            return tf.cast(tensor, tf.float16), tensor.dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor if ctx is None else tf.cast(tensor, ctx)


class Compression:
    none = NoneCompressor
    fp16 = FP16Compressor
