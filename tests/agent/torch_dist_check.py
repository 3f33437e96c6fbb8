"""A torch.distributed training step with no rank plumbing: it relies only on the torchrun
variables gj-mpirun gives every rank, and checks each one against what the MPI flavour told the
rank (OMPI_COMM_WORLD_* or PMI_*) and against the other ranks (local ranks per host, host index).
Then an allreduce and one DDP step that must leave identical weights on every rank.
Each rank's line ends with the intra-op thread count torch uses (torch.get_num_threads(), which
follows the OMP_NUM_THREADS gj-mpirun sets) for the launcher's tests to check.
Prints "TORCHDIST ok ..." per rank, or "TORCHDIST FAIL ..." and exits 1."""
import gc
import os
import socket
import sys
import time

import torch
import torch.distributed as dist


def fail(what):
    print(f"TORCHDIST FAIL rank={os.environ.get('RANK')} host={socket.gethostname()}: {what}", flush=True)
    sys.exit(1)


def mpi_truth():
    e = os.environ
    if "OMPI_COMM_WORLD_RANK" in e:
        names = ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE")
    else:
        names = ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS")
    return tuple(int(e[n]) for n in names)


def main():
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT"):
        if not os.environ.get(name):
            fail(f"{name} not set")
    rank, size, local, local_size = (int(os.environ[n]) for n in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"))
    group = int(os.environ["GROUP_RANK"])
    if (rank, size, local, local_size) != mpi_truth():
        fail(f"RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE {(rank, size, local, local_size)} != MPI's {mpi_truth()}")
    # Debian's python3-torch 2.x is built without libuv, which torch.distributed's TCP store asks
    # for by default since 2.4 (pip's wheels have it); USE_LIBUV=0 picks the store every build has.
    os.environ.setdefault("USE_LIBUV", "0")
    dist.init_process_group("gloo")  # env://: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
    if dist.get_rank() != rank or dist.get_world_size() != size:
        fail(f"torch sees rank {dist.get_rank()}/{dist.get_world_size()}")
    everyone = [None] * size
    dist.all_gather_object(everyone, (socket.gethostname(), local, local_size, group))
    hosts = []
    for r, (host, lr, ls, g) in enumerate(everyone):
        if host not in hosts:
            hosts.append(host)
        on_host = [e for e in everyone if e[0] == host]
        if sorted(e[1] for e in on_host) != list(range(len(on_host))) or ls != len(on_host):
            fail(f"host {host}: local ranks {[e[1] for e in on_host]}, LOCAL_WORLD_SIZE {ls}")
        if g != hosts.index(host):
            fail(f"rank {r} on {host}: GROUP_RANK {g}, host index {hosts.index(host)}")
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    if t.item() != size * (size + 1) / 2:
        fail(f"allreduce {t.item()} != {size * (size + 1) / 2}")
    ddp_step(rank, size)
    # DDP's reducer holds the process group: with the model gone (and any cycle collected), the
    # group's last reference is the one leave_together() destroys while every peer is still up.
    gc.collect()
    dist.barrier()
    print(f"TORCHDIST ok rank={rank}/{size} host={socket.gethostname()} local={local}/{local_size} group={group} "
          f"master={os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']} threads={torch.get_num_threads()}", flush=True)
    leave_together(rank, size)


def ddp_step(rank, size):
    """One DDP step that must leave identical weights on every rank."""
    torch.manual_seed(1000 + rank)  # different initial weights: DDP must broadcast rank 0's
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.full((8, 4), float(rank + 1))
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    w = torch.cat([p.detach().flatten() for p in model.parameters()])
    ws = [torch.zeros_like(w) for _ in range(size)]
    dist.all_gather(ws, w)
    if any(not torch.equal(ws[0], o) for o in ws):
        fail("DDP step left different weights on the ranks")


def leave_together(rank, size):
    """Destroys the process group, then leaves only once every rank has destroyed its own: a rank
    whose gloo peers exit while its process group is still alive can abort in torch's teardown
    (std::terminate, "terminate called without an active exception", seen twice in CI with Debian
    13's torch 2.6: once before this fence, once with a DDP model still holding the group past
    it), which is torch's and not what this program checks. The fence is the TCP store rank 0
    serves (kept alive by this reference); rank 0 leaves last, after every other rank has stopped
    asking it."""
    from torch.distributed import distributed_c10d
    store = distributed_c10d._get_default_store()
    dist.destroy_process_group()

    def count_until(key, want):
        store.add(key, 1)
        while int(store.add(key, 0)) < want:
            time.sleep(0.01)

    count_until("torch_dist_check.destroyed", size)
    if rank != 0:
        store.add("torch_dist_check.left", 1)
    else:
        while int(store.add("torch_dist_check.left", 0)) < size - 1:
            time.sleep(0.01)


if __name__ == "__main__":
    main()
