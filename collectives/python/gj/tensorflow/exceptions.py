"""The errors gj.tensorflow's collectives raise: HorovodInternalError (gj's one class, shared
with gj.torch) that is also a tf.errors.FailedPreconditionError, the TensorFlow error Horovod's
TF ops raise for the same failures. So `except hvd.HorovodInternalError` and
`except tf.errors.FailedPreconditionError` both catch it, eagerly. Inside a graph the GjStatus op
(_ops) raises the same classes from Session.run / the tf.function; without that op TensorFlow
reports a numpy_function callback's exception as tf.errors.UnknownError (its own error classes
included, measured with TF 2.21), and gj's message says what is missing."""

import tensorflow as tf

from ..common.exceptions import HorovodInternalError, HostsUpdatedInterrupt  # noqa: F401


class TensorFlowHorovodInternalError(HorovodInternalError, tf.errors.FailedPreconditionError):
    """A HorovodInternalError as TensorFlow's FailedPreconditionError."""

    def __init__(self, call, code, detail):
        HorovodInternalError.__init__(self, call, code, detail)
        self._node_def, self._op = None, None
        self._message = RuntimeError.__str__(self)
        self._error_code = tf.errors.FAILED_PRECONDITION
        self._experimental_payloads = {}

    def __str__(self):
        return self._message

    def noted(self, note):
        """This error with note appended to its message."""
        self._message += note
        self.args = (self._message,)
        return self

    def reworded(self, message):
        """This error with message as its whole message (a compiled op's, which names the call)."""
        self._message = message
        self.args = (message,)
        return self

    @classmethod
    def of(cls, error):
        if isinstance(error, cls):
            return error
        out = cls(error.call, error.code, "")
        out._message = str(error)
        out.args = (out._message,)
        return out


class TensorFlowInvalidArgumentError(ValueError, tf.errors.InvalidArgumentError):
    """A collective's invalid argument (a ValueError) as TensorFlow's InvalidArgumentError, the
    class Horovod's TF ops raise for it (inside a graph TensorFlow maps a callback's ValueError
    to InvalidArgumentError itself)."""

    def __init__(self, message):
        tf.errors.InvalidArgumentError.__init__(self, None, None, message)
        self.args = (message,)

    def __str__(self):
        return self.message


def translated(fn, *args):
    """fn(*args) with a HorovodInternalError raised as a TensorFlowHorovodInternalError and a
    ValueError as a TensorFlowInvalidArgumentError."""
    try:
        return fn(*args)
    except HorovodInternalError as e:
        raise TensorFlowHorovodInternalError.of(e) from None
    except ValueError as e:
        if isinstance(e, tf.errors.OpError):
            raise
        raise TensorFlowInvalidArgumentError(str(e)) from None
