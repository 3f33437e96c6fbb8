"""Horovod's reduce operations and scale factors: the one table gj.torch and gj.tensorflow use.

Horovod numbers its ops Average, Sum, Adasum, Min, Max, Product = 0..5 in every frontend; scripts
pass them as `op=hvd.Average` and compare them as ints. Every op but Adasum is one of the
library's reductions; Adasum is each frontend's own algorithm over the library's calls.
"""

import warnings

from .. import _lib
from .exceptions import HorovodInternalError

Average, Sum, Adasum, Min, Max, Product = 0, 1, 2, 3, 4, 5
OP_NAMES = {Average: "Average", Sum: "Sum", Adasum: "Adasum", Min: "Min", Max: "Max", Product: "Product"}
# Horovod's op -> the library's reduction (Adasum has none: the frontends run it themselves).
LIBRARY_OPS = {Average: _lib.AVG, Sum: _lib.SUM, Min: _lib.MIN, Max: _lib.MAX, Product: _lib.PROD}


def resolve(op, average, what, deprecation_hint=None):
    """Horovod's `op=` and its deprecated `average=` keyword -> one of the ops above.

    Both given is an error; neither means Average. `deprecation_hint` (the frontend's module,
    e.g. "gj.torch") turns on the DeprecationWarning for `average=` that names the replacement.
    """
    if op is not None and average is not None:
        raise ValueError(f"{what}: pass op= or the deprecated average=, not both (op={op!r}, average={average!r})")
    if average is not None:
        if deprecation_hint:
            warnings.warn(f"average= is deprecated; use op={deprecation_hint}.Average or op={deprecation_hint}.Sum",
                          DeprecationWarning, stacklevel=4)
        op = Average if average else Sum
    if op is None:
        op = Average
    if op not in OP_NAMES:
        raise ValueError(f"{what}: op={op!r} is not one of {', '.join(OP_NAMES.values())}")
    return op


def library_op(op, what):
    """The library's reduction for a resolved op; Adasum, which has none, is the caller's to run."""
    try:
        return LIBRARY_OPS[op]
    except KeyError:
        raise ValueError(f"{what}: op={OP_NAMES.get(op, op)!r} has no library reduction; use one of "
                         f"{', '.join(OP_NAMES[o] for o in LIBRARY_OPS)}") from None


def factors(prescale_factor, postscale_factor, what):
    """(prescale, postscale) as floats: the factors every reducing call multiplies by."""
    try:
        return float(prescale_factor), float(postscale_factor)
    except (TypeError, ValueError):
        raise TypeError(f"{what}: prescale_factor={prescale_factor!r} and postscale_factor="
                        f"{postscale_factor!r} must be numbers") from None


def adasum_refused(what):
    """The error of a call other than (grouped_)allreduce given op=Adasum: Horovod's core refuses
    it (a HorovodInternalError), not its Python argument checks."""
    return HorovodInternalError.disagreement(
        what, "op=Adasum combines whole tensors and is supported by allreduce and grouped_allreduce only "
        "(as Horovod); use op=Average or op=Sum")
