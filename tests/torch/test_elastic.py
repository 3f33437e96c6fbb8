"""hvd.elastic at a fixed size under mpiexec (np 2 and 3): run() syncs rank 0's state first,
commit()/restore() go back to the last commit (model, optimizer, sampler, plain values),
HorovodInternalError restores and re-raises, a HostsUpdatedInterrupt the function raises runs
it again after the reset callbacks, ElasticSampler resumes an epoch without repeating indices."""

import pytest
import torch

import gj.torch as hvd
from gj.torch.exceptions import HorovodInternalError, HostsUpdatedInterrupt


def _model(seed):
    torch.manual_seed(seed)
    return torch.nn.Linear(3, 2)


def _same_on_all_ranks(t):
    return torch.equal(hvd.broadcast(t.detach(), 0), t.detach())


def test_run_syncs_rank0_state_first(world):
    r, n = world
    model = _model(10 + r)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    state = hvd.elastic.TorchState(model, opt, epoch=r, history=[r])
    calls = []

    @hvd.elastic.run
    def train(state, factor):
        calls.append(factor)
        assert state.epoch == 0 and state.history == [0]
        assert all(_same_on_all_ranks(p) for p in state.model.parameters())
        return state.epoch + factor

    assert train(state, 5) == 5 and calls == [5]
    assert torch.equal(model.weight, _model(10).weight)


def test_commit_and_restore(world):
    r, n = world
    model = _model(1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    state = hvd.elastic.TorchState(model, opt, epoch=0, batch=0)
    model(torch.ones(4, 3)).sum().backward()
    opt.step()
    state.epoch, state.batch = 2, 7
    state.commit()
    committed = model.weight.detach().clone()
    momentum = opt.state_dict()["state"][0]["momentum_buffer"].clone()
    opt.step()
    state.epoch, state.batch = 3, 1
    state.restore()
    assert (state.epoch, state.batch) == (2, 7)
    assert torch.equal(model.weight, committed)
    assert torch.equal(opt.state_dict()["state"][0]["momentum_buffer"], momentum)


def test_internal_error_restores_and_reraises(world):
    state = hvd.elastic.ObjectState(step=1)
    state.commit()

    @hvd.elastic.run
    def train(state):
        state.step = 99
        raise HorovodInternalError("gjAllReduce", 8, "timeout: peer 1 did not arrive")

    with pytest.raises(HorovodInternalError, match="peer 1"):
        train(state)
    assert state.step == 1


def test_hosts_updated_interrupt_resets_and_runs_again(world):
    r, n = world
    state = hvd.elastic.ObjectState(tries=0)
    resets = []
    state.register_reset_callbacks([lambda: resets.append(1)])

    @hvd.elastic.run
    def train(state):
        state.tries += 1
        if state.tries == 1:
            state.commit()
            raise HostsUpdatedInterrupt()
        return state.tries

    # First try: sync, tries=1, commit, interrupt; reset; sync (rank 0's committed tries=1); 2.
    assert train(state) == 2 and resets == [1]


def test_elastic_sampler_resumes_without_repeats(world):
    r, n = world
    data = list(range(23))
    sampler = hvd.elastic.ElasticSampler(data, shuffle=True, seed=4)
    model = _model(2)
    state = hvd.elastic.TorchState(model, sampler=sampler)
    sampler.set_epoch(1)
    shares = hvd.allgather_object(list(sampler))
    assert sorted(set(i for s in shares for i in s)) == data
    assert len(sampler) == -(-len(data) // n)
    first = list(sampler)[:2]
    sampler.record_batch(0, 2)
    state.commit()
    sampler.record_batch(1, 2)  # not committed: forgotten by restore
    state.restore()
    state.sync()  # every rank's processed indices, united
    done = set(i for s in hvd.allgather_object(first) for i in s)
    rest = set(i for s in hvd.allgather_object(list(sampler)) for i in s)
    assert done.isdisjoint(rest) and done | rest == set(data)
    assert sampler.state_dict()["epoch"] == 1


def _shared_dir(tmp_path_factory):
    """A folder every rank names the same (rank 0's, broadcast; the ranks share this machine)."""
    path = str(tmp_path_factory.mktemp("persist")) if hvd.rank() == 0 else None
    return hvd.broadcast_object(path, root_rank=0)


def test_stop_requested_is_false_on_every_rank_without_a_stop(world):
    assert [hvd.stop_requested() for _ in range(3)] == [False, False, False]


def test_persist_to_writes_on_rank0_atomically_and_every_rank_loads_it(world, tmp_path_factory):
    import os
    r, n = world
    path = os.path.join(_shared_dir(tmp_path_factory), "state.pkl")
    model = _model(7)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    state = hvd.elastic.TorchState(model, opt, epoch=0)
    assert state.persist_to(path, every=2) is False  # nothing to load yet
    state.epoch = 1
    state.commit()
    hvd.barrier()
    assert not os.path.exists(path)  # every=2: not after the first commit
    model(torch.ones(1, 3)).sum().backward()
    opt.step()  # momentum buffers exist now
    state.epoch = 2
    state.commit()
    hvd.barrier()
    assert os.path.exists(path)
    assert [f for f in os.listdir(os.path.dirname(path)) if f != "state.pkl"] == []  # no temporary left
    fresh_model = _model(99)
    fresh_opt = torch.optim.SGD(fresh_model.parameters(), lr=0.1, momentum=0.9)
    fresh = hvd.elastic.TorchState(fresh_model, fresh_opt, epoch=0)
    assert fresh.persist_to(path) is True
    assert fresh.epoch == 2
    assert torch.equal(fresh_model.weight, model.weight)
    assert torch.equal(fresh_opt.state_dict()["state"][0]["momentum_buffer"], opt.state_dict()["state"][0]["momentum_buffer"])
    hvd.barrier()


def test_commit_on_a_stop_request_saves_and_ends_run(world, tmp_path_factory, monkeypatch):
    import os
    import pickle
    path = os.path.join(_shared_dir(tmp_path_factory), "stop.pkl")
    stop_at = {"commit": 3}
    commits = []

    def fake_stop_requested():  # the agreed answer stop_requested() gives: the same on every rank
        return len(commits) >= stop_at["commit"]

    monkeypatch.setattr(hvd.elastic.State, "default_stop_requested", staticmethod(fake_stop_requested))
    state = hvd.elastic.ObjectState(step=0)
    state.persist_to(path)

    @hvd.elastic.run
    def train(state):
        for step in range(1, 100):
            state.step = step
            commits.append(step)
            state.commit()
        return "finished"

    assert train(state) is None  # ended at the stop, not run to its end
    assert commits == [1, 2, 3]
    hvd.barrier()
    with open(path, "rb") as f:
        assert pickle.load(f)["objects"] == {"step": 3}
    hvd.barrier()
