"""Horovod's stall settings (gj/common/stall.py), no MPI: the plan from the environment, every
bad value named, and the watch's one warning per stalled operation."""

import pytest

from gj.common import stall as _stall


@pytest.mark.parametrize("env, check, settings", [
    ({}, 60.0, {}),
    ({"HOROVOD_STALL_CHECK_TIME_SECONDS": "5"}, 5.0, {}),
    ({"HOROVOD_STALL_CHECK_TIME_SECONDS": "0"}, None, {}),
    ({"HOROVOD_STALL_CHECK_DISABLE": "1", "HOROVOD_STALL_CHECK_TIME_SECONDS": "5"}, None, {}),
    ({"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": "2.5"}, 60.0, {"GJ_COLL_TIMEOUT_MS": "2500"}),
    ({"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": "0"}, 60.0, {"GJ_COLL_TIMEOUT_MS": "0"}),
    ({"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": "3", "GJ_COLL_TIMEOUT_MS": "3000"}, 60.0, {"GJ_COLL_TIMEOUT_MS": "3000"}),
    ({"GJ_COLL_TIMEOUT_MS": "7"}, 60.0, {}),
])
def test_plan(env, check, settings):
    assert _stall.plan(env) == (check, settings)


@pytest.mark.parametrize("env, message", [
    ({"HOROVOD_STALL_CHECK_TIME_SECONDS": "soon"}, "HOROVOD_STALL_CHECK_TIME_SECONDS='soon' is not a non-negative"),
    ({"HOROVOD_STALL_CHECK_TIME_SECONDS": "-1"}, "HOROVOD_STALL_CHECK_TIME_SECONDS='-1'"),
    ({"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": "nan"}, "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS='nan'"),
    ({"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": "inf"}, "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS='inf'"),
    ({"HOROVOD_STALL_CHECK_DISABLE": "yes"}, "HOROVOD_STALL_CHECK_DISABLE='yes' is not 0 or 1"),
    ({"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": "3", "GJ_COLL_TIMEOUT_MS": "5000"},
     "asks for a 3000 ms timeout but GJ_COLL_TIMEOUT_MS='5000' is set too"),
])
def test_bad_settings_are_named(env, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _stall.plan(env)


def test_apply_sets_the_library_timeout():
    env = {"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": "4"}
    assert _stall.apply(env) == 60.0 and env["GJ_COLL_TIMEOUT_MS"] == "4000"


def test_watch_warns_once_per_operation_that_waited_long_enough():
    watch = _stall.Watch(None, 0)
    assert watch.enter("allreduce") is None  # disabled: nothing tracked
    watch = _stall.Watch(3600.0, 0)  # its thread sleeps; stalled() is driven here
    a = watch.enter("allreduce")
    b = watch.enter("broadcast")
    start = watch._waiting[a][1]
    assert watch.stalled(start + 1) == []
    watch.leave(b)
    # (not start + 3600: (start + 3600) - start can round below 3600 for a large monotonic clock)
    assert [d for d, _ in watch.stalled(start + 3601)] == ["allreduce"]
    assert watch.stalled(start + 7200) == []  # once
    watch.leave(a)
    assert watch._waiting == {}
