"""Statistics of the step benchmark (pure: no torch, no MPI)."""

import math
import statistics


def median_ci(values):
    """The median of values and a distribution-free 95 % confidence interval for it: the order
    statistics k and n - 1 - k, k = floor((n - 1.96 sqrt(n)) / 2) (the binomial count of values
    below the median, normal approximation). Returns (median, low, high)."""
    v = sorted(values)
    n = len(v)
    if n == 0:
        raise ValueError("median_ci: no values")
    k = max(0, math.floor((n - 1.96 * math.sqrt(n)) / 2))
    return statistics.median(v), v[k], v[n - 1 - k]
