"""PEP 517 backend of `pip install <checkout or sdist>` (pyproject.toml's build-backend): the hooks
of scikit-build-core, with the wheel hooks preceded by gj_pip_preflight's check. A machine without a
compiler or an MPI then fails the install with one message naming what to install (exit 1 of the
hook, no traceback, no CMake log), and the MPI that was checked is the one CMake builds against.
The sdist hooks need neither and are scikit-build-core's own.
"""

import os
import sys

from scikit_build_core import build as _skbuild
from scikit_build_core.build import (  # noqa: F401 (re-exported hooks)
    build_sdist,
    get_requires_for_build_sdist,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

import gj_pip_preflight


def _checked(config_settings):
    """The settings for scikit-build-core once the machine can build gj; else the message and exit 1."""
    problems, wrapper = gj_pip_preflight.check_system(config_settings, os.environ)
    if problems:
        print(gj_pip_preflight.message(problems), file=sys.stderr, flush=True)
        raise SystemExit(1)
    return gj_pip_preflight.with_mpi(config_settings, wrapper)


def get_requires_for_build_wheel(config_settings=None):
    return _skbuild.get_requires_for_build_wheel(_checked(config_settings))


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _skbuild.build_wheel(wheel_directory, _checked(config_settings), metadata_directory)


def get_requires_for_build_editable(config_settings=None):
    return _skbuild.get_requires_for_build_editable(_checked(config_settings))


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _skbuild.build_editable(wheel_directory, _checked(config_settings), metadata_directory)
