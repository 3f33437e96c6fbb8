"""Horovod's environment variables on gj: TABLE is the one list of every HOROVOD_* variable
Horovod reads (horovod/common/common.h, its Gloo context, logging and its frontends) and of
its build-time ones, each with what gj does with it:

- "maps": gj honours it through its own setting(s), set from it at init() before the library
  reads them; a GJ_ setting of the same thing set to a different value is refused, naming both;
- "elsewhere": honoured by the module named (timeline.py, _stall.py), listed here for the table;
- "same": gj already behaves as the value asks (for the values `accepts` takes);
- "no": gj has nothing that does what it asks (the reason says why).

init() names, in one line on rank 0's stderr, every set HOROVOD_* variable gj does not honour:
"no" entries, "same" entries with a value asking for something else, and names not in the
table. plan() is pure (environment mapping in, settings and names out); apply() sets them.
"""

import collections
import os
import re
import sys

Entry = collections.namedtuple("Entry", "name kind gj why accepts")


def _entry(name, kind, gj, why, accepts=None):
    return Entry(name, kind, gj, why, accepts)


def _nonneg_int(name, raw):
    if not re.fullmatch(r"[0-9]+", raw.strip()):
        raise ValueError(f"{name}={raw!r} is not a non-negative integer")
    return int(raw)


def _truthy(raw):
    """Horovod's reading of a flag: strtol(value) > 0."""
    m = re.match(r"\s*[+-]?[0-9]+", raw)
    return bool(m) and int(m.group()) > 0


def _fusion(env):
    raw = env["HOROVOD_FUSION_THRESHOLD"]
    n = _nonneg_int("HOROVOD_FUSION_THRESHOLD", raw)
    # 0 is Horovod's "no fusion": one parameter per bucket, and no library fusion buffer.
    return {"GJ_TORCH_BUCKET_BYTES": str(max(n, 1)), "GJ_COLL_FUSION_BYTES": str(n)}


def _hierarchical(env):
    names = [n for n in ("HOROVOD_HIERARCHICAL_ALLREDUCE", "HOROVOD_HIERARCHICAL_ALLGATHER") if env.get(n)]
    values = {n: _truthy(env[n]) for n in names}
    if len(set(values.values())) > 1:
        raise ValueError(f"HOROVOD_HIERARCHICAL_ALLREDUCE={env[names[0]]!r} and HOROVOD_HIERARCHICAL_ALLGATHER="
                         f"{env[names[1]]!r} disagree, but gj has one switch for every host collective "
                         "(GJ_COLL_HIERARCHICAL); set them alike or set GJ_COLL_HIERARCHICAL alone")
    return {"GJ_COLL_HIERARCHICAL": "1" if any(values.values()) else "0"}


_LOG_LEVELS = {"trace": "debug", "debug": "debug", "info": "info", "warning": "warn", "error": "error",
               "fatal": "error"}


def _log_level(env):
    raw = env["HOROVOD_LOG_LEVEL"]
    level = _LOG_LEVELS.get(raw.strip().lower())
    if level is None:
        raise ValueError(f"HOROVOD_LOG_LEVEL={raw!r} is not one of Horovod's levels: {', '.join(_LOG_LEVELS)}")
    return {"GJ_COLL_LOG_LEVEL": level}


_GLOO = "set by horovodrun for Gloo; gj's ranks and hosts come from MPI (MPI_COMM_WORLD)"
_BUILD = "a build-time choice of Horovod's pip install, not read at run time; gj decides at run time (GJ_COLL_BACKEND)"
_AUTOTUNE = "gj has no autotuner: its bucket and fusion sizes are fixed (HOROVOD_FUSION_THRESHOLD)"

TABLE = (
    _entry("HOROVOD_FUSION_THRESHOLD", "maps", ("GJ_TORCH_BUCKET_BYTES", "GJ_COLL_FUSION_BYTES"),
           "bytes: the optimizer's bucket size and the library's fusion buffer (0: one parameter per "
           "bucket, no fusion buffer)"),
    _entry("HOROVOD_CYCLE_TIME", "no", None,
           "gj has no background cycle: a bucket is issued as soon as its gradients are ready; how much is "
           "fused is the bucket size (HOROVOD_FUSION_THRESHOLD)"),
    _entry("HOROVOD_HIERARCHICAL_ALLREDUCE", "maps", ("GJ_COLL_HIERARCHICAL",),
           "the two-level path (shared memory in a node, MPI between one leader per node) for every host "
           "collective; with HOROVOD_HIERARCHICAL_ALLGATHER they must agree (gj has one switch)"),
    _entry("HOROVOD_HIERARCHICAL_ALLGATHER", "maps", ("GJ_COLL_HIERARCHICAL",),
           "as HOROVOD_HIERARCHICAL_ALLREDUCE"),
    _entry("HOROVOD_LOG_LEVEL", "maps", ("GJ_COLL_LOG_LEVEL",),
           "trace and debug -> debug, info -> info, warning -> warn, error and fatal -> error"),
    _entry("HOROVOD_TIMELINE", "elsewhere", ("timeline.py",), "the Chrome trace written by rank 0"),
    _entry("HOROVOD_TIMELINE_MARK_CYCLES", "same", None, "gj has no cycles to mark", accepts=lambda v: not _truthy(v)),
    _entry("HOROVOD_STALL_CHECK_DISABLE", "elsewhere", ("_stall.py",), "1: no stall warnings"),
    _entry("HOROVOD_STALL_CHECK_TIME_SECONDS", "elsewhere", ("_stall.py",), "the stall warning's delay"),
    _entry("HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "elsewhere", ("_stall.py", "GJ_COLL_TIMEOUT_MS"),
           "a collective not complete after this long fails on every waiting rank"),
    _entry("HOROVOD_LOG_HIDE_TIME", "same", None, "gj's log lines carry no time stamp", accepts=_truthy),
    _entry("HOROVOD_CPU_OPERATIONS", "same", None, "gj's host collectives are MPI's (and its shared-memory engine)",
           accepts=lambda v: v.strip().lower() == "mpi"),
    _entry("HOROVOD_CONTROLLER", "same", None, "gj's ranks agree over MPI",
           accepts=lambda v: v.strip().lower() == "mpi"),
    _entry("HOROVOD_DYNAMIC_PROCESS_SETS", "same", None,
           "gj's add_process_set/remove_process_set work at any time", accepts=lambda v: True),
    _entry("HOROVOD_ELASTIC", "same", None,
           "gj's elastic runs at the job's fixed size; the optimizer registers its hooks at any size",
           accepts=lambda v: True),
    _entry("HOROVOD_DISABLE_GROUP_FUSION", "same", None,
           "a group (groups=, grouped_allreduce) is never fused with another request", accepts=_truthy),
    _entry("HOROVOD_DISABLE_NVTX_RANGES", "same", None, "gj emits no NVTX ranges", accepts=_truthy),
    _entry("HOROVOD_AUTOTUNE", "no", None, _AUTOTUNE),
    _entry("HOROVOD_AUTOTUNE_LOG", "no", None, _AUTOTUNE),
    _entry("HOROVOD_AUTOTUNE_WARMUP_SAMPLES", "no", None, _AUTOTUNE),
    _entry("HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", "no", None, _AUTOTUNE),
    _entry("HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "no", None, _AUTOTUNE),
    _entry("HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "no", None, _AUTOTUNE),
    _entry("HOROVOD_CACHE_CAPACITY", "no", None, "gj has no response cache: there is no negotiation to cache"),
    _entry("HOROVOD_BATCH_D2D_MEMCOPIES", "no", None, "the library's fusion copies have no such switch"),
    _entry("HOROVOD_NUM_NCCL_STREAMS", "no", None, "gj's CUDA collectives run on torch's current stream"),
    _entry("HOROVOD_ENABLE_ASYNC_COMPLETION", "no", None,
           "no switch: gj's CUDA requests are ordered on torch's stream and waited for by synchronize"),
    _entry("HOROVOD_TORUS_ALLREDUCE", "no", None, "gj has no torus allreduce"),
    _entry("HOROVOD_MPI_THREADS_DISABLE", "no", None, "gj's progress thread needs MPI's thread support"),
    _entry("HOROVOD_THREAD_AFFINITY", "no", None,
           "gj's progress thread keeps the rank's affinity (the launcher's binding)"),
    _entry("HOROVOD_ADASUM_MPI_CHUNK_SIZE", "no", None, "gj's Adasum (adasum.py) exchanges whole tensors"),
    _entry("HOROVOD_CCL_CACHE", "no", None, "gj has no oneCCL backend"),
    _entry("HOROVOD_ENABLE_XLA_OPS", "no", None, "TensorFlow's XLA only"),
    _entry("HOROVOD_GLOO_IFACE", "no", None, _GLOO),
    _entry("HOROVOD_GLOO_TIMEOUT_SECONDS", "no", None, _GLOO),
    _entry("HOROVOD_GLOO_RENDEZVOUS_ADDR", "no", None, _GLOO),
    _entry("HOROVOD_GLOO_RENDEZVOUS_PORT", "no", None, _GLOO),
    _entry("HOROVOD_HOSTNAME", "no", None, _GLOO),
    _entry("HOROVOD_RANK", "no", None, _GLOO),
    _entry("HOROVOD_SIZE", "no", None, _GLOO),
    _entry("HOROVOD_LOCAL_RANK", "no", None, _GLOO),
    _entry("HOROVOD_LOCAL_SIZE", "no", None, _GLOO),
    _entry("HOROVOD_CROSS_RANK", "no", None, _GLOO),
    _entry("HOROVOD_CROSS_SIZE", "no", None, _GLOO),
    _entry("HOROVOD_GPU_OPERATIONS", "no", None, _BUILD),
    _entry("HOROVOD_GPU_ALLREDUCE", "no", None, _BUILD),
    _entry("HOROVOD_GPU_ALLGATHER", "no", None, _BUILD),
    _entry("HOROVOD_GPU_BROADCAST", "no", None, _BUILD),
    _entry("HOROVOD_GPU_ALLTOALL", "no", None, _BUILD),
    _entry("HOROVOD_GPU_REDUCESCATTER", "no", None, _BUILD),
)
BY_NAME = {e.name: e for e in TABLE}

# How the GJ_ settings a HOROVOD_ variable maps onto are compared with a value already set.
_MAPPERS = {"HOROVOD_FUSION_THRESHOLD": _fusion, "HOROVOD_HIERARCHICAL_ALLREDUCE": _hierarchical,
            "HOROVOD_HIERARCHICAL_ALLGATHER": _hierarchical, "HOROVOD_LOG_LEVEL": _log_level}


def _bytes(raw):
    m = re.fullmatch(r"\s*([0-9]+)\s*([KMG]?)\s*", raw or "")
    if not m:
        return raw
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


def _flag(raw):
    word = (raw or "").strip().lower()
    return {"1": True, "true": True, "yes": True, "on": True,
            "0": False, "false": False, "no": False, "off": False}.get(word, raw)


_SAME_VALUE = {"GJ_TORCH_BUCKET_BYTES": _bytes, "GJ_COLL_FUSION_BYTES": _bytes, "GJ_COLL_HIERARCHICAL": _flag,
               "GJ_COLL_LOG_LEVEL": lambda v: (v or "").strip()}


def plan(env):
    """(settings {GJ_ variable: value} to set, sorted names of the set HOROVOD_* variables gj
    does not honour). Raises ValueError for a value it cannot read and for a HOROVOD_ variable
    whose GJ_ setting is set to something else (naming both)."""
    settings = {}
    for name, mapper in _MAPPERS.items():
        if not env.get(name):
            continue
        for gj_name, value in mapper(env).items():
            if gj_name in settings:  # the two hierarchical names: already checked alike
                continue
            mine = env.get(gj_name)
            if mine is not None and _SAME_VALUE[gj_name](mine) != _SAME_VALUE[gj_name](value):
                raise ValueError(f"{name}={env[name]!r} asks for {gj_name}={value} but {gj_name}={mine!r} is "
                                 "set too; set one of them")
            settings[gj_name] = value
    unhonoured = []
    for name in sorted(k for k in env if k.startswith("HOROVOD_") and env[k] != ""):
        entry = BY_NAME.get(name)
        if entry is None or entry.kind == "no" or (entry.kind == "same" and not entry.accepts(env[name])):
            unhonoured.append(name)
    return settings, unhonoured


def unhonoured_line(names, frontend="gj"):
    """The one line init() prints on rank 0 when names is not empty."""
    return (f"{frontend}: HOROVOD_* variables set but not honoured by gj: {', '.join(names)} (each one's reason: "
            "docs/torch.md, \"Horovod's environment variables\")")


def apply(environ=os.environ):
    """Before the library's communicator is made: sets the GJ_ settings of plan(environ) and
    returns the names gj does not honour."""
    settings, unhonoured = plan(environ)
    environ.update(settings)
    return unhonoured


def report(names, rank, out=None, frontend="gj"):
    if names and rank == 0:
        print(unhonoured_line(names, frontend), file=out or sys.stderr, flush=True)
