"""horovod: gj's Horovod alias. With this file's folder (gj/horovod_alias) on sys.path, which
`gj-mpirun --horovod-alias` (GJ_HOROVOD_ALIAS=1) gives every rank as a PYTHONPATH entry, a Horovod
script's imports run on gj unchanged:

    horovod.torch             is gj.torch
    horovod.tensorflow        is gj.tensorflow
    horovod.tensorflow.keras  is gj.tensorflow.keras
    horovod.keras             is gj.tensorflow.keras

The same module objects (each submodule too: horovod.torch.elastic is gj.torch.elastic), so
isinstance and module state are shared whichever name a script uses. horovod.__version__ is gj's
version and horovod.__file__ this file. Rank 0 says once on stderr that horovod is gj.

A Horovod module gj does not provide (horovod.mxnet, horovod.spark, horovod.ray, ...) is an
ImportError naming the alias. A real Horovod elsewhere on sys.path is an ImportError naming both
unless GJ_HOROVOD_ALIAS says which wins: `gj` (this alias) or `horovod` (the real one is loaded in
this module's place). docs/torch.md, "Migration from Horovod"."""

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

import gj as _gj

__version__ = _gj.__version__
_GJ_HOROVOD_ALIAS = True  # marks this file: another copy of the alias is no real Horovod

# horovod.<name> -> gj's module; their submodules follow (horovod.torch.elastic -> gj.torch.elastic).
_FRONTENDS = {"torch": "gj.torch", "tensorflow": "gj.tensorflow", "keras": "gj.tensorflow.keras"}
_PROVIDES = ("horovod.torch, horovod.tensorflow, horovod.tensorflow.keras and horovod.keras "
             "(gj.torch, gj.tensorflow, gj.tensorflow.keras)")
_ALIAS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _real_horovod():
    """The spec of a Horovod found on sys.path besides this alias (and other copies of it), or None."""
    others = [p for p in sys.path if os.path.abspath(p or os.curdir) != _ALIAS_DIR]
    spec = importlib.machinery.PathFinder.find_spec("horovod", others)
    if spec is None or spec.origin is None:
        return None
    try:
        with open(spec.origin, encoding="utf-8", errors="replace") as f:
            if "_GJ_HOROVOD_ALIAS = True" in f.read():
                return None
    except OSError:
        pass
    return spec


def _real_version(spec):
    try:
        import importlib.metadata as metadata
        return "Horovod " + metadata.version("horovod")
    except Exception:  # no distribution metadata: the folder is all we can name
        return "Horovod"


def _rank():
    for name in ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"):
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 0


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves horovod.<frontend>[.<sub>] to gj's module object; other horovod.* are an ImportError."""

    def find_spec(self, name, path=None, target=None):
        if not name.startswith(__name__ + "."):
            return None
        parts = name.split(".")
        if parts[1] not in _FRONTENDS:
            raise ImportError(
                "{}: gj's horovod alias (GJ_HOROVOD_ALIAS, gj-mpirun --horovod-alias; horovod is gj {} here) "
                "provides {}; Horovod's {} has no gj counterpart: drop that import, or turn the alias off "
                "(GJ_HOROVOD_ALIAS=0) where a real Horovod is installed".format(
                    name, __version__, _PROVIDES, parts[1]), name=name)
        gj_name = ".".join([_FRONTENDS[parts[1]]] + parts[2:])
        if importlib.util.find_spec(gj_name) is None:
            raise ModuleNotFoundError("No module named {!r}: gj's horovod alias maps it to {}, which gj does not "
                                      "have".format(name, gj_name), name=name)
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        # The import system takes whatever sys.modules holds under the name once this returns
        # (and sets it as the parent's attribute): gj's module itself, not a copy.
        name = module.__name__
        parts = name.split(".")
        sys.modules[name] = importlib.import_module(".".join([_FRONTENDS[parts[1]]] + parts[2:]))


def _install():
    choice = os.environ.get("GJ_HOROVOD_ALIAS", "").strip().lower()
    real = _real_horovod()
    if real is not None and choice == "horovod":
        # The user chose the installed Horovod: it takes this module's place.
        module = importlib.util.module_from_spec(real)
        sys.modules[__name__] = module
        real.loader.exec_module(module)
        return False
    if real is not None and choice != "gj":
        raise ImportError(
            "gj's horovod alias ({}) and {} ({}) are both on sys.path: say which one `import horovod` is, "
            "GJ_HOROVOD_ALIAS=gj (gj {}) or GJ_HOROVOD_ALIAS=horovod (the installed one)".format(
                _ALIAS_DIR, _real_version(real), os.path.dirname(real.origin), __version__))
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())
    if _rank() == 0:
        shadowed = "" if real is None else "; it shadows {} at {} (GJ_HOROVOD_ALIAS=gj)".format(
            _real_version(real), os.path.dirname(real.origin))
        sys.stderr.write("horovod is gj {} ({}), gj's horovod alias: horovod.torch is gj.torch, horovod.tensorflow "
                         "gj.tensorflow, horovod.keras and horovod.tensorflow.keras gj.tensorflow.keras{}\n".format(
                             __version__, os.path.dirname(os.path.abspath(_gj.__file__)), shadowed))
        sys.stderr.flush()
    return True


_install()
