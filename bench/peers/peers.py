"""The peers of the comparison benchmarks (docs/benchmarks.md, "Against Horovod, DDP and
MultiWorkerMirroredStrategy"): gj.torch and, in the same processes, horovod.torch (MPI or Gloo
controller) and torch DDP over gloo, and the interleaved timing every table uses.

Every program runs under mpiexec (or gj-mpirun). gj.torch is initialized first: it starts MPI
(MPI_THREAD_MULTIPLE, which Horovod's MPI controller then finds) and carries the coordination
(barriers, the slowest rank's times, the Gloo rendezvous port). Horovod is imported only when a
program asks for it, so the programs run without it (their smoke tests do), and runs only while
its own calls run (horovod_switch.py: its idle cycle would take the CPU from everything else):
the programs call every peer through run() and interleaved().
"""

import os
import socket
import subprocess
import time

import torch

import gj.torch as gj
from bench_stats import median_ci
from horovod_switch import HorovodSwitch

CONTROLLERS = ("mpi", "gloo")


def _global_ipv4():
    """(interface, address) of this host's first global IPv4 address: what Horovod's Gloo binds
    to and rank 0's rendezvous is reached at when the ranks span hosts."""
    out = subprocess.run(["ip", "-o", "-4", "addr", "show", "scope", "global"], capture_output=True, text=True,
                         check=True).stdout.split()
    if "inet" not in out:
        raise RuntimeError("no global IPv4 address on this host (ip -o -4 addr show scope global): "
                           "Horovod's Gloo needs one to reach the other hosts")
    return out[1], out[out.index("inet") + 1].split("/")[0]


class _GlooRendezvous:
    """What horovodrun --gloo does before starting the workers, done inside the job: rank 0
    serves Horovod's rendezvous, every rank gets its slot (host, local and cross rank) from
    Horovod's own host assignment of this job's ranks, and the HOROVOD_* variables its Gloo
    context reads. Kept for the job's lifetime; reset() before every restart of Horovod."""

    def __init__(self):
        from horovod.runner.common.util.hosts import get_host_assignments, parse_hosts
        from horovod.runner.http.http_server import RendezvousServer
        host = socket.gethostname()
        hosts = gj.allgather_object(host)
        order = list(dict.fromkeys(hosts))
        if hosts != sorted(hosts, key=order.index):
            raise RuntimeError(f"Horovod's Gloo slots need each host's ranks to be consecutive; ranks by host: {hosts}")
        self.plan = get_host_assignments(parse_hosts(",".join(f"{h}:{hosts.count(h)}" for h in order)), len(hosts))
        self.server = None
        if gj.rank() == 0:
            self.server = RendezvousServer(verbose=0)
            port = self.server.start()
            self.server.init(self.plan)
            where = (_global_ipv4()[1] if gj.cross_size() > 1 else "127.0.0.1", port)
        else:
            where = None
        addr, port = gj.broadcast_object(where, root_rank=0)
        slot = self.plan[gj.rank()]
        os.environ.update({
            "HOROVOD_GLOO_RENDEZVOUS_ADDR": addr, "HOROVOD_GLOO_RENDEZVOUS_PORT": str(port),
            "HOROVOD_CONTROLLER": "gloo", "HOROVOD_CPU_OPERATIONS": "gloo",
            "HOROVOD_GLOO_IFACE": _global_ipv4()[0] if gj.cross_size() > 1 else "lo", "HOROVOD_HOSTNAME": slot.hostname,
            "HOROVOD_RANK": str(slot.rank), "HOROVOD_SIZE": str(slot.size),
            "HOROVOD_LOCAL_RANK": str(slot.local_rank), "HOROVOD_LOCAL_SIZE": str(slot.local_size),
            "HOROVOD_CROSS_RANK": str(slot.cross_rank), "HOROVOD_CROSS_SIZE": str(slot.cross_size)})

    def reset(self):
        """Empties the server's store between two starts of Horovod. Its server clears a scope
        (global, local_<host>, cross_<n>) only when every rank of it has left, and then forgets
        every other scope's departures too (http_server.py, do_DELETE: finished_list.clear()):
        when one host's ranks leave `local_*` while the last rank leaves `global`, that local
        scope keeps the old addresses, and the next start's ranks connect to the previous
        Horovod's closed ports (a gloo exception, SIGABRT: seen across pods). Collective: every
        rank's last rendezvous is over before rank 0 resets, and no rank starts before it has."""
        gj.barrier()
        if self.server:
            self.server.init(self.plan)
        gj.barrier()


# Starts and stops Horovod around its own calls; set by init().
switch = HorovodSwitch(None)


def init(horovod=None):
    """Initializes gj.torch, and horovod.torch with controller `horovod` ("mpi", "gloo" or None:
    no Horovod). Returns the horovod.torch module or None."""
    gj.init()
    if horovod is None:
        return None
    if horovod not in CONTROLLERS:
        raise ValueError(f"horovod controller {horovod!r}: choose from {', '.join(CONTROLLERS)}")
    try:
        import horovod.torch as hvd
    except ImportError as e:
        raise SystemExit(f"cannot import horovod.torch ({e}): build it with bench/horovod/build.sh and run "
                         "this program with that environment's python (bench/peers/run.sh does)") from e
    rendezvous = _GlooRendezvous() if horovod == "gloo" else None
    if rendezvous is None:
        os.environ.update({"HOROVOD_CONTROLLER": "mpi", "HOROVOD_CPU_OPERATIONS": "mpi"})
    hvd.init()
    if (hvd.rank(), hvd.size()) != (gj.rank(), gj.size()):
        raise RuntimeError(f"Horovod's rank/size {hvd.rank()}/{hvd.size()} differ from MPI's {gj.rank()}/{gj.size()}")
    if horovod == "mpi" and not hvd.mpi_enabled() or horovod == "gloo" and not hvd.gloo_enabled():
        raise RuntimeError(f"Horovod did not start its {horovod} controller (mpi_enabled={hvd.mpi_enabled()}, "
                           f"gloo_enabled={hvd.gloo_enabled()})")
    global switch
    switch = HorovodSwitch(hvd, before_start=rendezvous.reset if rendezvous else None)
    return hvd


def run(name, fn):
    """fn() with Horovod running exactly when `name` is one of its modes ("horovod ...")."""
    switch.before(name)
    return fn()


def interleaved(runners, rounds, iters):
    """Times each runner (name -> callable doing one operation) in `rounds` rounds; in a round
    every runner runs `iters` times in a row between barriers, the runners in an order that
    rotates every round, so load drift and the runner just before favour none; Horovod runs only
    during its own runners' batches, each (re)start followed by one untimed call. Returns name ->
    list of per-call seconds per round, each the slowest rank's (identical on every rank)."""
    names = list(runners)
    for n, fn in runners.items():  # warm-up: connections, buffers, Horovod's caches
        run(n, fn)
    t = {n: [0.0] * rounds for n in names}
    for r in range(rounds):
        for n in names[r % len(names):] + names[:r % len(names)]:
            if switch.before(n):
                runners[n]()
            gj.barrier()
            t0 = time.perf_counter()
            for _ in range(iters):
                runners[n]()
            t[n][r] = (time.perf_counter() - t0) / iters
    flat = gj.allreduce(torch.tensor([v for n in names for v in t[n]], dtype=torch.float64), op=gj.Max)
    return {n: flat[k * rounds:(k + 1) * rounds].tolist() for k, n in enumerate(names)}


def ratio_ci(times, peer, base):
    """Median and 95 % CI over rounds of peer time / base time in the same round (> 1: base
    faster)."""
    return median_ci([p / b for p, b in zip(times[peer], times[base])])


def iters_for(nbytes, budget=4 << 20, most=20):
    """Calls per batch: about `budget` bytes moved, between 1 and `most` calls (short batches:
    on a shared VM a batch longer than a time slice measures the CPU share, not the call)."""
    return max(1, min(most, budget // max(nbytes, 1)))


def fmt_us(seconds):
    return f"{seconds * 1e6:.1f}"


def fmt_ci(ci):
    return f"{ci[0]:.2f} [{ci[1]:.2f}, {ci[2]:.2f}]"


def size_label(nbytes):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{nbytes >> shift} {unit}"
    return f"{nbytes} B"


def header(what, hvd, controller, rounds):
    """The line above every table: what, ranks, hosts, versions, load."""
    load = open("/proc/loadavg").read().split()[:3]
    peer = f"horovod {hvd.__version__ if hasattr(hvd, '__version__') else _horovod_version()} ({controller} controller)" \
        if hvd else "no Horovod"
    return (f"# {what}: {gj.size()} ranks on {gj.cross_size()} host(s), torch {torch.__version__}, {peer}, "
            f"{torch.get_num_threads()} torch thread(s), medians of {rounds} interleaved rounds (slowest rank), "
            f"[95 % CI], {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, loadavg {' '.join(load)}")


def _horovod_version():
    import horovod
    return horovod.__version__
