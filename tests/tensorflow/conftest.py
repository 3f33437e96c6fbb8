"""Shared by the gj.tensorflow tests: every rank runs the same pytest session under mpiexec, so
the tests (and the collectives inside them) run in the same order on every rank. `mode` runs a
test body eagerly and inside tf.function."""

import os

import pytest
import tensorflow as tf

import gj.tensorflow as hvd


@pytest.fixture(scope="session")
def world():
    hvd.init()
    return hvd.rank(), hvd.size()


@pytest.fixture(params=["eager", "function"])
def mode(request):
    """run(fn, *args): fn(*args) eagerly, or as a tf.function (traced afresh each test)."""
    if request.param == "eager":
        return lambda fn, *args: fn(*args)
    return lambda fn, *args: tf.function(fn)(*args)


def keras_version():
    return "2" if os.environ.get("TF_USE_LEGACY_KERAS") == "1" else "3"
