"""Horovod's horovod.tensorflow.util helpers that scripts and Horovod's tests import."""

import tensorflow as tf


def _executing_eagerly():
    """True when eager execution is enabled (Horovod's name)."""
    return tf.executing_eagerly()


def _make_subgraph(f):
    return tf.function(f)
