"""The bucket plan of DistributedOptimizer (pure; no MPI)."""

import pytest

from gj.common.buckets import plan_buckets


def test_reverse_order_split_by_size_and_kind():
    assert plan_buckets([4, 4, 4, 4], ["f"] * 4, bucket_bytes=8) == [[3, 2], [1, 0]]
    assert plan_buckets([4, 20, 4], ["f"] * 3, bucket_bytes=8) == [[2], [1], [0]]
    assert plan_buckets([4, 4, 4], ["f", "h", "h"], bucket_bytes=100) == [[2, 1], [0]]
    assert plan_buckets([], [], bucket_bytes=8) == []


def test_groups():
    assert plan_buckets([1] * 4, ["f"] * 4, groups=2) == [[3, 2], [1, 0]]
    assert plan_buckets([1] * 4, ["f"] * 4, bucket_bytes=100, groups=[[0, 3]]) == [[3, 0], [2, 1]]
    with pytest.raises(ValueError, match="more than one group"):
        plan_buckets([1] * 3, ["f"] * 3, groups=[[0], [0]])
    with pytest.raises(ValueError, match="positive"):
        plan_buckets([1], ["f"], groups=0)


def test_bucket_bytes_default_by_device():
    # CUDA parameters get larger buckets (NCCL's bandwidth curve); the variable overrides both.
    from gj.torch.optimizer import DEFAULT_DEVICE_BUCKET_BYTES, _bucket_bytes
    assert _bucket_bytes({}, cuda=True) == DEFAULT_DEVICE_BUCKET_BYTES == 25 << 20
    assert _bucket_bytes({}, cuda=False) == 4 << 20
    assert _bucket_bytes({"GJ_TORCH_BUCKET_BYTES": "1024"}, cuda=True) == 1024
