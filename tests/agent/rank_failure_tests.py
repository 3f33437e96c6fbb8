#!/usr/bin/env python3
"""Rank failures through the real gj-mpirun, master-only, real mpiexec (2 ranks, Open MPI or
MPICH): rank 1 leaves the job (exit 3, exit 0 without shutdown, an exception, SIGKILL, SIGSEGV,
the OOM killer) and the job must end within 5 s of its departure with exit 7 and one failure
summary naming rank 1, its pod, its status and its stderr tail; the other rank (a stand-in for
the collectives library, rank_failure_prog.py) gets `lost rank=1` within 2 s. A healthy job
prints no summary and exits 0.

Usage: rank_failure_tests.py <gj-mpirun> <case> <openmpi|mpich|intel>
Exit: 0 pass, 1 fail, 77 skip (the MPI flavour or the cgroup v2 memory controller missing).
"""
import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "rank_failure_prog.py")
TORCH_PROG = os.path.join(os.path.dirname(HERE), "torch", "rank_failure_torch.py")
PYTHON = "/usr/bin/python3"
SKIP = 77


class Fail(Exception):
    pass


class Skip(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


def base_env(flavour, scratch):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GJ_", "OMPI_", "PMI", "HYDRA_"))}
    env.update({
        "GJ_TRAINING_ROLE": "master", "GJ_TRAINING_VC_JOB_NAME": "job", "GJ_TRAINING_POD_NAME": "job-master-0",
        "GJ_TRAINING_MASTER_CPU_LIMIT": "2", "GJ_TRAINING_MASTER_GPU_LIMIT": "0", "GJ_TRAINING_MASTER_REPLICAS": "1",
        "GJ_TRAINING_WORKER_CPU_LIMIT": "2", "GJ_TRAINING_WORKER_GPU_LIMIT": "0", "GJ_TRAINING_WORKER_REPLICAS": "0",
        "MPI_HOST": "", "GJ_MASTER_HOST": "localhost", "GJ_NO_SSHD": "1", "GJ_NO_WAIT": "1",
        "GJ_PYTHON": PYTHON, "GJ_STATE_DIR": os.path.join(scratch, "state"),
        "GJ_TERMINATION_LOG": os.path.join(scratch, "termination-log"),
        "OMPI_MCA_btl": "self,vader,tcp", "OMPI_MCA_plm_rsh_agent": "false",
        "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    })
    if flavour == "mpich":
        env.update({"GJ_MPI": "mpich", "GJ_MPIEXEC": "mpiexec.mpich"})
    elif flavour == "intel":  # Intel MPI's runtime (tests/impi); the rank program needs no MPI library
        root = os.environ.get("GJ_IMPI_ROOT", "/opt/gj-venvs/impi")
        env.update({"GJ_MPI": "intel", "GJ_MPIEXEC": os.path.join(root, "bin", "mpiexec.hydra"), "I_MPI_ROOT": root})
    else:
        env.update({"GJ_MPI": "openmpi", "GJ_MPIEXEC": "mpiexec.openmpi"})
    if shutil.which(env["GJ_MPIEXEC"]) is None:
        if os.environ.get("CI") == "true" and flavour == "intel":
            raise Fail(f"{env['GJ_MPIEXEC']} is not installed (CI=true: scripts/install-deps.sh --impi makes it)")
        raise Skip(f"{env['GJ_MPIEXEC']} is not installed")
    return env


def run(gj, mode, env, prefix=(), prog=PROG):
    p = subprocess.run([*prefix, gj, prog, mode], env=env, capture_output=True, text=True, timeout=120)
    return p, time.time()


SUMMARY = re.compile(r"rank failure: rank (\d+) \(local rank (\d+), pod ([^)]+)\) (.*) at (\S+Z); it was the first rank")


def summary_lines(stderr):
    return [l.split("] ", 1)[1] for l in stderr.splitlines() if " error] " in l and "] " in l]


def check_failure(p, ended, want_status, want_tail=None, oom=False):
    out = p.stdout + p.stderr
    check(p.returncode == 7, f"gj-mpirun exit {p.returncode}, want 7 (a rank failed)\n{out}")
    heads = [m for m in map(SUMMARY.search, p.stderr.splitlines()) if m]
    check(len(heads) == 1, f"want exactly one summary, got {len(heads)}\n{out}")
    m = heads[0]
    check(m.group(1) == "1" and m.group(2) == "1" and m.group(3) == "job-master-0",
          f"summary names rank {m.group(1)} local {m.group(2)} pod {m.group(3)}, want rank 1 local 1 pod job-master-0")
    check(m.group(4).startswith(want_status), f"summary status {m.group(4)!r}, want {want_status!r}")
    departed = datetime.datetime.strptime(m.group(5), "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
    check(0 <= ended - departed < 5.0, f"the job ended {ended - departed:.2f} s after rank 1 left (want < 5 s)\n{out}")
    lines = summary_lines(p.stderr)
    if want_tail:
        check(any(l.startswith("  | ") and want_tail in l for l in lines), f"stderr tail lacks {want_tail!r}\n{out}")
    if oom:
        check(any("killed by the OOM killer (pod memory limit" in l for l in lines), f"no OOM line\n{out}")
    check(any(l.startswith("  collateral (ended because of it): rank 0 (job-master-0") for l in lines),
          f"no collateral line naming rank 0\n{out}")
    check("gj-mpirun exits with 7 (a rank failed" in p.stderr, out)
    return departed


def check_standin(p, departed):
    m = re.search(r"^STANDIN lost (lost rank=1 host=job-master-0 reason=.*) at ([0-9.]+)$", p.stdout, re.M)
    check(m, f"rank 0 (the library's stand-in) never got `lost rank=1`\n{p.stdout}\n{p.stderr}")
    check(float(m.group(2)) - departed < 2.0, f"`lost` reached rank 0 {float(m.group(2)) - departed:.2f} s after the departure")


# gj.torch under gj-mpirun (tests/torch/rank_failure_torch.py): mode -> summary status, tail line.
TORCH_CASES = {
    "exit3": ("exited with code 3", "rank 1 line before leaving"),
    "exit0": ("called shutdown and exited with code 0 while other ranks were still working", "rank 1 line before leaving"),
    "raise": ("exited with code 1", "RuntimeError: boom in rank 1"),
    "sigkill": ("killed by SIGKILL", "rank 1 line before leaving"),
}


def check_torch_raised(p, departed):
    m = re.search(r"^RAISED ([0-9.]+) (.*)$", p.stdout, re.M)
    check(m, f"rank 0 never raised HorovodInternalError\n{p.stdout}\n{p.stderr}")
    check("rank 1 (host job-master-0)" in m.group(2), f"the error does not name rank 1 and its host: {m.group(2)}")
    took = float(m.group(1)) - departed
    check(took < 2.0, f"rank 0 raised {took:.2f} s after rank 1 left (want < 2 s)")
    print(f"rank 0 raised {took * 1000:.0f} ms after rank 1 left: {m.group(2)}")


def termination_log(env):
    with open(env["GJ_TERMINATION_LOG"]) as f:
        return f.read()


CASES = {
    # mode: (summary status, a stderr tail line)
    "exit3": ("exited with code 3", "rank 1 line before leaving"),
    "exit0": ("exited with code 0 without calling shutdown", "rank 1 line before leaving"),
    "raise": ("exited with code 1", "RuntimeError: boom in rank 1"),
    "sigkill": ("killed by SIGKILL", "rank 1 line before leaving"),
    "sigsegv": ("killed by SIGSEGV", "rank 1 line before leaving"),
}


def memory_cgroup(scratch):
    """A cgroup v2 with memory.max = 256 MiB to run the job in, or Skip saying why not."""
    if os.geteuid() != 0:
        raise Skip("the OOM case needs root to make a cgroup")
    root = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            if parts[parts.index("-") + 1] == "cgroup2":
                root = parts[4]
                break
    if root is None:
        raise Skip("no cgroup v2 hierarchy mounted")
    with open("/proc/self/cgroup") as f:
        mine = next((l.strip()[3:] for l in f if l.startswith("0::")), "/")
    parent = os.path.normpath(root + mine)
    try:
        with open(os.path.join(parent, "cgroup.controllers")) as f:
            if "memory" not in f.read().split():
                raise Skip(f"the memory controller is not available in {parent} (cgroup v1 memory or not delegated)")
        with open(os.path.join(parent, "cgroup.subtree_control"), "w") as f:
            f.write("+memory")
        group = os.path.join(parent, "gj-oom-" + os.path.basename(scratch))
        os.mkdir(group)
        with open(os.path.join(group, "memory.max"), "w") as f:
            f.write(str(256 << 20))
        if os.path.exists(os.path.join(group, "memory.swap.max")):
            with open(os.path.join(group, "memory.swap.max"), "w") as f:
                f.write("0")
    except OSError as e:
        raise Skip(f"cannot make a memory-limited cgroup under {parent}: {e}")
    return group


def main():
    gj, case, flavour = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
    scratch = tempfile.mkdtemp(prefix="gj-rank-failure-")
    group = None
    try:
        env = base_env(flavour, scratch)
        open(env["GJ_TERMINATION_LOG"], "w").close()
        if case == "healthy":
            p, _ = run(gj, "ok", env)
            out = p.stdout + p.stderr
            check(p.returncode == 0, f"healthy job exit {p.returncode}\n{out}")
            check("rank failure" not in out, f"a healthy job printed a summary\n{out}")
            for r in (0, 1):
                check(f"RANK {r} end: end status=ok" in p.stdout, f"rank {r} did not get end status=ok\n{out}")
            check(termination_log(env) == "", "a healthy job wrote the termination log")
        elif case == "restart_every":
            # --max-restarts 2 and a rank that fails on every attempt: three attempts, three
            # summaries, one line per restart, then exit 7 with the last attempt's summary.
            env["GJ_MAX_RESTARTS"] = "2"
            p, _ = run(gj, "exit3-plain", env)
            out = p.stdout + p.stderr
            check(p.returncode == 7, f"gj-mpirun exit {p.returncode}, want 7\n{out}")
            heads = [m for m in map(SUMMARY.search, p.stderr.splitlines()) if m]
            check(len(heads) == 3, f"want 3 summaries (one per attempt), got {len(heads)}\n{out}")
            for k in (1, 2):
                check(re.search(rf"attempt {k} of 3 failed after [0-9.]+ s \(rank failure: rank 1 .*exited with code 3"
                                rf".*\); starting attempt {k + 1} of 3", p.stderr), f"no restart line after attempt {k}\n{out}")
            check("attempt 3 of 3 failed" in p.stderr and "it was the last" in p.stderr, f"no last-attempt line\n{out}")
            for k in range(3):
                for r in (0, 1):
                    check(f"RANK {r} up monitor_fd=" in p.stdout and re.search(rf"^RANK {r} up .* restart={k}/{k}/2$", p.stdout, re.M),
                          f"rank {r} of attempt {k + 1} did not see GJ_RESTART_COUNT={k}\n{out}")
            check(p.stderr.count("gj-mpirun exits with 7") == 1, f"want one exit line\n{out}")
        elif case == "plain":
            # Rank 0 without the library would wait forever: the master ends the job itself.
            p, ended = run(gj, "exit3-plain", env)
            check_failure(p, ended, "exited with code 3", "rank 1 line before leaving")
        elif case.startswith("torch-"):
            how = case[len("torch-"):]
            status, tail = TORCH_CASES[how]
            p, ended = run(gj, how, env, prog=TORCH_PROG)
            departed = check_failure(p, ended, status, tail)
            check_torch_raised(p, departed)
            print(f"the job ended {ended - departed:.2f} s after rank 1 left")
        elif case == "oom":
            group = memory_cgroup(scratch)
            prefix = ["/bin/sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "sh"]
            p, ended = run(gj, "oom", env, prefix)
            departed = check_failure(p, ended, "killed by SIGKILL (OOM killer: pod memory limit 256 MiB)", oom=True)
            check_standin(p, departed)
        else:
            status, tail = CASES[case]
            p, ended = run(gj, case, env)
            departed = check_failure(p, ended, status, tail)
            check_standin(p, departed)
            log = termination_log(env)
            check(log.startswith("rank failure: rank 1 (local rank 1, pod job-master-0) " + status), f"termination log: {log!r}")
        print(f"PASS {case} ({flavour})")
        return 0
    except Skip as e:
        print(f"SKIP {case} ({flavour}): {e}")
        return SKIP
    except Fail as e:
        print(f"FAIL {case} ({flavour}): {e}")
        return 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if group:
            try:
                os.rmdir(group)
            except OSError:
                pass


if __name__ == "__main__":
    sys.exit(main())
