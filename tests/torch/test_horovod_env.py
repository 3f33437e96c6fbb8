"""Horovod's environment variables (gj/common/horovod_env.py), no MPI: each mapping, each
conflict refused naming both values, the names of the set variables gj does not honour, and
docs/torch.md listing every entry of the table."""

import io
import pathlib

import pytest

from gj.common import horovod_env as he


@pytest.mark.parametrize("env, settings", [
    ({}, {}),
    ({"HOROVOD_FUSION_THRESHOLD": "1048576"}, {"GJ_TORCH_BUCKET_BYTES": "1048576", "GJ_COLL_FUSION_BYTES": "1048576"}),
    ({"HOROVOD_FUSION_THRESHOLD": "0"}, {"GJ_TORCH_BUCKET_BYTES": "1", "GJ_COLL_FUSION_BYTES": "0"}),
    ({"HOROVOD_FUSION_THRESHOLD": "2097152", "GJ_COLL_FUSION_BYTES": "2M", "GJ_TORCH_BUCKET_BYTES": "2097152"},
     {"GJ_TORCH_BUCKET_BYTES": "2097152", "GJ_COLL_FUSION_BYTES": "2097152"}),
    ({"HOROVOD_HIERARCHICAL_ALLREDUCE": "1"}, {"GJ_COLL_HIERARCHICAL": "1"}),
    ({"HOROVOD_HIERARCHICAL_ALLGATHER": "0"}, {"GJ_COLL_HIERARCHICAL": "0"}),
    ({"HOROVOD_HIERARCHICAL_ALLREDUCE": "1", "HOROVOD_HIERARCHICAL_ALLGATHER": "1", "GJ_COLL_HIERARCHICAL": "on"},
     {"GJ_COLL_HIERARCHICAL": "1"}),
    ({"HOROVOD_LOG_LEVEL": "WARNING"}, {"GJ_COLL_LOG_LEVEL": "warn"}),
    ({"HOROVOD_LOG_LEVEL": "trace"}, {"GJ_COLL_LOG_LEVEL": "debug"}),
    ({"HOROVOD_LOG_LEVEL": "fatal"}, {"GJ_COLL_LOG_LEVEL": "error"}),
    ({"HOROVOD_FUSION_THRESHOLD": ""}, {}),  # empty: not set
])
def test_mappings(env, settings):
    assert he.plan(env) == (settings, [])


@pytest.mark.parametrize("env, names", [
    ({"HOROVOD_FUSION_THRESHOLD": "1024", "GJ_TORCH_BUCKET_BYTES": "4096"},
     ("HOROVOD_FUSION_THRESHOLD='1024'", "GJ_TORCH_BUCKET_BYTES='4096'")),
    ({"HOROVOD_FUSION_THRESHOLD": "1024", "GJ_COLL_FUSION_BYTES": "64M"},
     ("HOROVOD_FUSION_THRESHOLD='1024'", "GJ_COLL_FUSION_BYTES='64M'")),
    ({"HOROVOD_HIERARCHICAL_ALLREDUCE": "0", "GJ_COLL_HIERARCHICAL": "1"},
     ("HOROVOD_HIERARCHICAL_ALLREDUCE='0'", "GJ_COLL_HIERARCHICAL='1'")),
    ({"HOROVOD_HIERARCHICAL_ALLREDUCE": "1", "HOROVOD_HIERARCHICAL_ALLGATHER": "0"},
     ("HOROVOD_HIERARCHICAL_ALLREDUCE='1'", "HOROVOD_HIERARCHICAL_ALLGATHER='0'")),
    ({"HOROVOD_LOG_LEVEL": "debug", "GJ_COLL_LOG_LEVEL": "error"},
     ("HOROVOD_LOG_LEVEL='debug'", "GJ_COLL_LOG_LEVEL='error'")),
])
def test_conflicts_name_both(env, names):
    with pytest.raises(ValueError) as e:
        he.plan(env)
    for n in names:
        assert n in str(e.value)


@pytest.mark.parametrize("env, message", [
    ({"HOROVOD_FUSION_THRESHOLD": "64M"}, "HOROVOD_FUSION_THRESHOLD='64M' is not a non-negative integer"),
    ({"HOROVOD_FUSION_THRESHOLD": "-1"}, "HOROVOD_FUSION_THRESHOLD='-1'"),
    ({"HOROVOD_LOG_LEVEL": "loud"}, "HOROVOD_LOG_LEVEL='loud' is not one of Horovod's levels"),
])
def test_bad_values(env, message):
    with pytest.raises(ValueError, match=message):
        he.plan(env)


def test_unhonoured_names_exactly_the_set_ones():
    env = {"HOROVOD_CYCLE_TIME": "5", "HOROVOD_AUTOTUNE": "1", "HOROVOD_FUSION_THRESHOLD": "64",
           "HOROVOD_TIMELINE": "/tmp/t.json", "HOROVOD_STALL_CHECK_TIME_SECONDS": "9",
           "HOROVOD_CPU_OPERATIONS": "gloo", "HOROVOD_CONTROLLER": "MPI", "HOROVOD_LOG_HIDE_TIME": "1",
           "HOROVOD_TIMELINE_MARK_CYCLES": "1", "HOROVOD_DISABLE_GROUP_FUSION": "0",
           "HOROVOD_GPU_OPERATIONS": "NCCL", "HOROVOD_NOT_A_HOROVOD_NAME": "x", "HOROVOD_RANK": "",
           "GJ_COLL_CHECK": "1", "PATH": "/bin"}
    assert he.plan(env)[1] == ["HOROVOD_AUTOTUNE", "HOROVOD_CPU_OPERATIONS", "HOROVOD_CYCLE_TIME",
                               "HOROVOD_DISABLE_GROUP_FUSION", "HOROVOD_GPU_OPERATIONS",
                               "HOROVOD_NOT_A_HOROVOD_NAME", "HOROVOD_TIMELINE_MARK_CYCLES"]


def test_report_prints_one_line_on_rank_0_only():
    for rank, want in ((0, 1), (1, 0)):
        out = io.StringIO()
        he.report(["HOROVOD_CYCLE_TIME"], rank, out)
        assert out.getvalue().count("\n") == want
        if want:
            assert "HOROVOD_CYCLE_TIME" in out.getvalue()
    out = io.StringIO()
    he.report([], 0, out)
    assert out.getvalue() == ""


def test_apply_sets_the_settings():
    env = {"HOROVOD_FUSION_THRESHOLD": "4096", "HOROVOD_CYCLE_TIME": "1"}
    assert he.apply(env) == ["HOROVOD_CYCLE_TIME"]
    assert env["GJ_TORCH_BUCKET_BYTES"] == "4096" and env["GJ_COLL_FUSION_BYTES"] == "4096"
    assert he.apply(env) == ["HOROVOD_CYCLE_TIME"]  # a second init: the values it set agree


def test_table_is_well_formed_and_documented():
    kinds = {"maps", "elsewhere", "same", "no"}
    assert len(he.BY_NAME) == len(he.TABLE)
    doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "torch.md").read_text()
    for e in he.TABLE:
        assert e.kind in kinds, e
        assert e.why, e
        assert (e.accepts is not None) == (e.kind == "same"), e
        assert (e.kind == "maps") == (e.name in he._MAPPERS), e
        assert f"`{e.name}`" in doc, f"docs/torch.md does not list {e.name}"
