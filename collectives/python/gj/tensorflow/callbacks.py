"""gj.tensorflow.callbacks is gj.tensorflow.keras.callbacks, the same module object: scripts
written `import horovod.tensorflow as hvd ... hvd.callbacks.BroadcastGlobalVariablesCallback(0)`
run with only the import changed (real Horovod has no horovod.tensorflow.callbacks)."""

import sys

from .keras import callbacks as _callbacks

sys.modules[__name__] = _callbacks
