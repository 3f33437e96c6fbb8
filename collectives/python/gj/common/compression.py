"""Horovod's gradient compression for any frontend: Compression.none, or Compression.fp16 (floating
tensors travel as float16 and come back in their own dtype; others unchanged). The frontend says
what a tensor is and how to cast it (fp16_compressor's arguments); the rules are here once."""


class Compressor:
    """compress(tensor) -> (tensor to send, context); decompress(tensor, context) -> tensor."""

    @staticmethod
    def compress(tensor):
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


def fp16_compressor(is_floating, cast, half):
    """The FP16Compressor of a framework: is_floating(dtype), cast(tensor, dtype), its float16 dtype."""

    class FP16Compressor(Compressor):
        """Floating tensors travel as float16 and come back in their own dtype; others unchanged."""

        @staticmethod
        def compress(tensor):
            if is_floating(tensor.dtype) and tensor.dtype != half:
                return cast(tensor, half), tensor.dtype
            return tensor, None

        @staticmethod
        def decompress(tensor, ctx):
            return tensor if ctx is None else cast(tensor, ctx)

    return FP16Compressor
