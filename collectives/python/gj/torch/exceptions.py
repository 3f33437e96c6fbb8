"""Exceptions of gj.torch, named as Horovod names them (one class for every gj frontend)."""

from ..common.exceptions import HorovodInternalError, HostsUpdatedInterrupt  # noqa: F401
