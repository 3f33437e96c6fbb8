"""Pure planning of DistributedOptimizer's gradient buckets (no torch, no communication).

A bucket is a list of parameter indices reduced by one fused request. The plan depends only on
the parameters' order, sizes and wire dtypes, so it is identical on every rank that built the
same model; buckets are issued strictly in plan order, which is what keeps every rank's
sequence of requests identical whatever order the gradient hooks fire in.

Buckets walk the parameters in reverse (backward produces the last layer's gradients first),
so the first bucket fills first and the issue order follows the backward pass.
"""

DEFAULT_BUCKET_BYTES = 4 << 20


def plan_buckets(nbytes, kinds, bucket_bytes=DEFAULT_BUCKET_BYTES, groups=None):
    """nbytes[i], kinds[i]: wire size and dtype of parameter i. groups: None (buckets of at most
    bucket_bytes, a larger parameter alone), an int N (N buckets of consecutive parameters with
    about equal counts) or a list of lists of indices (each list fused; the indices not listed
    get buckets of their own size plan). Every bucket holds one kind. Returns a list of lists."""
    n = len(nbytes)
    if len(kinds) != n:
        raise ValueError(f"plan_buckets: {n} sizes but {len(kinds)} kinds")
    order = list(range(n - 1, -1, -1))
    if groups is None:
        return _by_size(order, nbytes, kinds, bucket_bytes)
    if isinstance(groups, int) and not isinstance(groups, bool):
        if groups <= 0:
            raise ValueError(f"groups={groups} must be a positive number of groups")
        chunks = [order[k * n // groups:(k + 1) * n // groups] for k in range(groups)]
        return [b for c in chunks if c for b in _split_kinds(c, kinds)]
    listed = []
    seen = set()
    for g, members in enumerate(groups):
        members = sorted(set(members), reverse=True)
        for i in members:
            if not 0 <= i < n:
                raise ValueError(f"groups[{g}] names parameter {i}, not one of the optimizer's {n}")
            if i in seen:
                raise ValueError(f"groups: parameter {i} is in more than one group")
            seen.add(i)
        if members:
            listed.append(members)
    rest = [i for i in order if i not in seen]
    buckets = [b for m in listed for b in _split_kinds(m, kinds)] + _by_size(rest, nbytes, kinds, bucket_bytes)
    # Issue order follows the backward pass: the bucket holding the latest parameter first.
    return sorted(buckets, key=lambda b: -max(b))


def _split_kinds(members, kinds):
    out = {}
    for i in members:
        out.setdefault(kinds[i], []).append(i)
    return list(out.values())


def _by_size(order, nbytes, kinds, bucket_bytes):
    buckets, cur, cur_bytes = [], [], 0
    for i in order:
        if cur and (kinds[i] != kinds[cur[0]] or cur_bytes + nbytes[i] > bucket_bytes):
            buckets.append(cur)
            cur, cur_bytes = [], 0
        cur.append(i)
        cur_bytes += nbytes[i]
    if cur:
        buckets.append(cur)
    return buckets
