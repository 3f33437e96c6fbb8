"""The step benchmark's confidence interval for a median (bench/torch/bench_stats.py)."""

import os
import random
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "torch"))
from bench_stats import median_ci  # noqa: E402


def test_order_statistics_bound_the_median():
    values = list(range(30))
    random.Random(1).shuffle(values)
    assert median_ci(values) == (14.5, 9, 20)
    assert median_ci(list(range(100))) == (49.5, 40, 59)
    assert median_ci([7.0]) == (7.0, 7.0, 7.0)
    with pytest.raises(ValueError, match="no values"):
        median_ci([])


def test_covers_the_true_median_about_95_percent_of_the_time():
    rng = random.Random(2)
    for n in (30, 60):
        covered = 0
        for _ in range(2000):
            _, lo, hi = median_ci([rng.gauss(5.0, 3.0) for _ in range(n)])
            covered += lo <= 5.0 <= hi
        assert 0.93 <= covered / 2000 <= 0.985, (n, covered)
