"""Shared by the gj.torch tests: every rank runs the same pytest session under mpiexec, so the
tests (and the collectives inside them) run in the same order on every rank."""

import pytest
import torch

import gj.torch as hvd


@pytest.fixture(scope="session")
def world():
    hvd.init()
    return hvd.rank(), hvd.size()


def ranks_values(n, fn):
    """[fn(r) for r in range(n)] as a tensor: what every rank contributed."""
    return torch.stack([fn(r) for r in range(n)])
