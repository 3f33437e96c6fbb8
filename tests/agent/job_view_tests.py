#!/usr/bin/env python3
"""Inside a running job, through the real gj-mpirun master-only under real mpiexec (2 ranks):
docs/agent.md "Stop requests", "Hangs", "Status lines".

  stop       SIGTERM to gj-mpirun: every rank's program that polls for a stop request hears
             `stop` on its rank socket, leaves by itself within GJ_STOP_GRACE, and the job ends 0
  stop-pod   a pod's stop request (what a worker pod's gj-mpirun sends its rank wrappers on SIGTERM:
             SIGRTMIN+1 to the wrappers noted in GJ_STATE_DIR/ranks): the wrapper asks the master,
             every rank hears `stop`, and the job ends 0 without any termination signal
  stop-deaf  a program that never polls: the signal reaches mpiexec at once (no grace wait)
  blocked    gj.torch, rank 1 blocked in stuck_in_data_loader before its 5th allreduce: after the
             stall time (2 s here) the master's log names rank 1, what it last completed, its
             process state, CPU use and Python stack with that function; the hang timeout (6 s
             here) ends the job as a failure of rank 1 (exit 7, the summary says it hung)
  sigstop    the same with rank 1 SIGSTOPped: its state is "stopped", and the hang timeout ends it
  phase      rank 0 alone in a phase without collectives for 5 s (the stall time 2 s, the hang
             timeout at its default): named with its stack, and the job goes on and ends 0

  nccl       a GPU job (GJ_TRAINING_MASTER_GPU_LIMIT=2, no GPU needed): each rank's NCCL stand-in
             writes NCCL's INIT/NET lines into the NCCL_DEBUG_FILE gj set, rank 0 (IB) at its start
             and deleted before its end, rank 1 (sockets) just before its end; the master logs
             `NCCL transport: IB (mlx5_0:1/IB) on 1 pod(s), NCCL 2.18.5+cuda12.2` and a warning that
             the pod's ranks use IB and Socket (so rank 0's file was read while it ran and rank 1's
             at its end); with the user's own NCCL_DEBUG, gj sets no file and logs no line

  metrics    GJ_METRICS_PORT: a real Prometheus server (Debian's `prometheus`) scrapes the master's
             endpoint during the job, and its query API returns every per-rank series for both
             ranks, the pod's network series and the job's (stand-in program: progress lines as
             the library sends them)

  gpu-metrics  a GPU job (GJ_TRAINING_MASTER_GPU_LIMIT=2) with the fake NVML (argv[4],
             tests/agent/fake_nvml.c, a test double) listing each rank's program with (rank+1) MB
             at 37 % utilization: the master's endpoint shows gj_rank_gpu_memory_bytes and
             gj_rank_gpu_utilization_ratio for both ranks with those values

The gj.torch cases need gj on PYTHONPATH (tests/torch/CMakeLists.txt runs them).

Usage: job_view_tests.py <gj-mpirun> <case> <openmpi|mpich> [<fake NVML> for gpu-metrics]
Exit: 0 pass, 1 fail, 77 skip.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from rank_failure_tests import Fail, Skip, base_env, check  # noqa: E402

PROG = os.path.join(HERE, "job_view_prog.py")
TORCH_PROG = os.path.join(os.path.dirname(HERE), "torch", "hang_torch.py")
SKIP = 77


def start(gj, env, args):
    return subprocess.Popen([gj, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_lines(p, prefix, count, timeout):
    """Reads stdout until `count` lines start with prefix; returns the lines read."""
    seen, got = [], 0
    deadline = time.time() + timeout
    while got < count:
        check(time.time() < deadline, f"{count} line(s) {prefix!r} within {timeout} s; stdout so far: {seen}")
        line = p.stdout.readline()
        check(line != "", f"stdout ended before {count} line(s) {prefix!r}: {seen}")
        seen.append(line.rstrip("\n"))
        got += line.startswith(prefix)
    return seen


def case_stop_pod(gj, env):
    p = start(gj, env, [PROG, "stop"])
    wait_lines(p, "RANK ", 2, 60)
    ranks = os.path.join(env["GJ_STATE_DIR"], "ranks")
    pids = [int(n) for n in os.listdir(ranks)] if os.path.isdir(ranks) else []
    check(len(pids) == 2, f"both wrappers noted their pid in {ranks}: {pids}")
    os.kill(pids[0], signal.SIGRTMIN + 1)
    out, err = p.communicate(timeout=60)
    text = out + err
    for r in (0, 1):
        check(f"RANK {r} stop: stop reason=pod job-master-0 is being stopped" in out,
              f"rank {r} heard `stop` with the pod's reason:\n{text}")
    check("asking every rank to stop" in err, f"the master's log says so:\n{err}")
    check(p.returncode == 0, f"the job ends 0, got {p.returncode}:\n{text}")
    check(not os.listdir(ranks), f"the wrappers removed their notes: {os.listdir(ranks)}")


def case_stop(gj, env, deaf):
    env = dict(env, GJ_STOP_GRACE="30")
    p = start(gj, env, [PROG, "stop-deaf" if deaf else "stop"])
    wait_lines(p, "RANK ", 2, 60)
    time.sleep(1.5)  # the job monitor counts the programs that poll (it looks every 0.2 s)
    sent = time.time()
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    took = time.time() - sent
    text = out + err
    if deaf:
        check(took < 10, f"a job that never polls ends at once on SIGTERM (took {took:.1f} s):\n{text}")
        check("asked to stop" not in text, f"no grace announced for a job that never polls:\n{text}")
        check(p.returncode == 128 + signal.SIGTERM, f"exit {p.returncode}, want 143:\n{text}")
        return
    for r in (0, 1):
        check(f"RANK {r} stop: stop reason=gj-mpirun received a termination signal" in out,
              f"rank {r} heard `stop` with its reason:\n{text}")
    check("every rank was asked to stop" in err and "GJ_STOP_GRACE" in err, f"the master's log says so:\n{err}")
    check(took < 15, f"the ranks left by themselves well before the 30 s grace (took {took:.1f} s):\n{text}")
    check(p.returncode == 0, f"a job whose ranks all left cleanly after a stop request ends 0, got {p.returncode}:\n{text}")


def case_hang(gj, env, how):
    env = dict(env, HOROVOD_STALL_CHECK_TIME_SECONDS="2", GJ_STATUS_INTERVAL="2")
    if how != "phase":
        env["GJ_HANG_TIMEOUT"] = "6"
    open(env["GJ_TERMINATION_LOG"], "w").close()
    args = [TORCH_PROG, how] + (["5"] if how == "phase" else [])
    p = subprocess.run([gj, *args], env=env, capture_output=True, text=True, timeout=100)
    out, err = p.stdout, p.stderr
    text = out + err
    hang = [l.split("] ", 1)[1] for l in err.splitlines() if "] hang: " in l]
    missing = 0 if how == "phase" else 1
    waiter = 1 - missing
    named = [re.search(r"in gjAllReduce #(\d+) of the world set \(2 ranks\)", l) for l in hang
             if l.startswith(f"hang: rank(s) {waiter} have waited") and f"for rank(s) {missing}, which have not entered it" in l]
    check(any(named), f"the master names rank {missing} as the one rank {waiter} waits for in an allreduce:\n{text}")
    seq = int([m for m in named if m][0].group(1))
    check(any(l.startswith(f"hang: rank {missing} (local rank {missing}, pod job-master-0) last completed gjAllReduce "
                           f"#{seq - 1}") for l in hang), f"what rank {missing} last completed (#{seq - 1}):\n{text}")
    state = "stopped (T" if how == "sigstop" else "sleeping (S)"
    check(any(l.startswith(f"hang: rank {missing}: process {state}") and "CPU " in l and "over the last 5 s" in l
              for l in hang), f"its process state ({state}) and CPU use:\n{text}")
    if how == "sigstop":
        check(any("no Python stack: the process is stopped" in l for l in hang), f"why no stack:\n{text}")
    else:
        function = "checkpoint_alone" if how == "phase" else "stuck_in_data_loader"
        check(any(l.startswith(f"hang: rank {missing}: | ") and f"in {function}" in l for l in hang),
              f"its Python stack names {function}:\n{text}")
    check(any("] status: 2 rank(s) running" in l for l in err.splitlines()), f"a status line:\n{text}")
    if how == "phase":
        check(p.returncode == 0, f"a rank alone in a long phase: the job goes on and ends 0, got {p.returncode}:\n{text}")
        for r in (0, 1):
            check(f"RANK {r} done" in out, f"rank {r} finished:\n{text}")
            check(any(re.search(f"] rank {r} \\(pod job-master-0\\): \\d+ collectives, .* of its time in collectives, "
                                "peak RSS", l) for l in err.splitlines()),
                  f"the end-of-job line of rank {r}:\n{text}")
        return
    check(p.returncode == 7, f"the hang timeout ends the job as a rank failure (exit 7), got {p.returncode}:\n{text}")
    summary = [l.split("] ", 1)[1] for l in err.splitlines() if " error] " in l]
    check(any(l.startswith(f"rank failure: rank 1 (local rank 1, pod job-master-0) hung: never entered gjAllReduce #{seq} ")
              and "--hang-timeout/GJ_HANG_TIMEOUT 6.0 s" in l for l in summary),
          f"the summary names rank 1 as hung, in which collective, for how long:\n{text}")
    if how == "blocked":
        check(any("in stuck_in_data_loader" in l for l in summary), f"the summary has its stack:\n{text}")
    log = open(env["GJ_TERMINATION_LOG"]).read()
    check(log.startswith("rank failure: rank 1 (local rank 1, pod job-master-0) hung"), f"termination log: {log!r}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def query(port, expr):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.load(r)["data"]["result"]


RANK_SERIES = ("gj_collectives_total", "gj_collective_bytes_total", "gj_collective_seconds_total",
               "gj_collective_wait_seconds_total", "gj_rank_rss_bytes", "gj_rank_cpu_seconds_total")
JOB_SERIES = ("gj_pod_network_receive_bytes_total", "gj_pod_network_transmit_bytes_total", "gj_job_ranks",
              "gj_job_state", "gj_job_hang_ranks", "gj_job_hang_seconds")


def case_metrics(gj, env, scratch):
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        if os.environ.get("CI") == "true":
            raise Fail("prometheus is not installed (CI=true: scripts/install-deps.sh installs it)")
        raise Skip("prometheus is not installed (Debian's prometheus package)")
    mport, pport = free_port(), free_port()
    done = os.path.join(scratch, "done")
    config = os.path.join(scratch, "prometheus.yml")
    with open(config, "w") as f:
        f.write("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: gj\n"
                f"    static_configs:\n      - targets: ['127.0.0.1:{mport}']\n")
    job = start(gj, dict(env, GJ_METRICS_PORT=str(mport)), [PROG, "metrics", done])
    prom = subprocess.Popen([prometheus, f"--config.file={config}", f"--storage.tsdb.path={scratch}/tsdb",
                             f"--web.listen-address=127.0.0.1:{pport}", "--log.level=warn"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        missing = None
        deadline = time.time() + 30
        while time.time() < deadline:
            time.sleep(1)
            try:
                missing = []
                for name in RANK_SERIES:
                    ranks = {r["metric"].get("rank") for r in query(pport, name)
                             if r["metric"].get("pod") == "job-master-0" and "local_rank" in r["metric"]}
                    missing += [f"{name}{{rank={r}}}" for r in ("0", "1") if r not in ranks]
                for name in JOB_SERIES:
                    if not query(pport, name):
                        missing.append(name)
                if not missing:
                    break
            except (OSError, ValueError, KeyError):
                missing = ["(the query API did not answer yet)"]
        check(not missing, f"Prometheus has every series for every rank; missing: {missing}")
        grew = query(pport, 'gj_collectives_total{rank="1"} > 0')
        check(grew, "gj_collectives_total of rank 1 counts the collectives")
    finally:
        open(done, "w").close()
        prom.terminate()
        prom.wait(timeout=20)
        out, err = job.communicate(timeout=60)
    check(job.returncode == 0, f"the job ends 0, got {job.returncode}:\n{out}{err}")


def scrape(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            return r.read().decode()
    except OSError:
        return ""


def case_gpu_metrics(gj, env, fake_nvml):
    state = tempfile.mkdtemp(prefix="gj-gpu-", dir=os.path.expanduser("~"))
    procs = os.path.join(state, "procs")
    os.makedirs(procs)
    done = os.path.join(state, "done")
    mport = free_port()
    env = dict(env, GJ_TRAINING_MASTER_GPU_LIMIT="2", GJ_STATE_DIR=os.path.join(state, "state"),
               GJ_METRICS_PORT=str(mport), GJ_NVML_LIBRARY=fake_nvml, FAKE_NVML_PROCS=procs,
               FAKE_NVML_UTIL="37", FAKE_NVML_COUNT="2")
    job = start(gj, env, [PROG, "metrics", done])
    try:
        want = [f'gj_rank_gpu_memory_bytes{{rank="{r}",pod="job-master-0",local_rank="{r}"}} {(r + 1) * 1000000}'
                for r in (0, 1)]
        want += [f'gj_rank_gpu_utilization_ratio{{rank="{r}",pod="job-master-0",local_rank="{r}"}} 0.37' for r in (0, 1)]
        text, deadline = "", time.time() + 25
        while time.time() < deadline and not all(w in text for w in want):
            time.sleep(0.5)
            text = scrape(mport)
        missing = [w for w in want if w not in text]
        check(not missing, f"the endpoint shows {missing}; it showed:\n{text}")
        check("# TYPE gj_rank_gpu_memory_bytes gauge" in text and "# TYPE gj_rank_gpu_utilization_ratio gauge" in text,
              f"both families are typed gauges:\n{text}")
    finally:
        open(done, "w").close()
        out, err = job.communicate(timeout=60)
        shutil.rmtree(state, ignore_errors=True)
    check(job.returncode == 0, f"the job ends 0, got {job.returncode}:\n{out}{err}")


def case_nccl(gj, env):
    # The rank mode refuses an NCCL folder below a folder others may write (/tmp): the state
    # folder goes below the home folder for this case.
    state = tempfile.mkdtemp(prefix="gj-nccl-", dir=os.path.expanduser("~"))
    try:
        case_nccl_in(gj, dict(env, GJ_TRAINING_MASTER_GPU_LIMIT="2", GJ_STATE_DIR=state))
    finally:
        shutil.rmtree(state, ignore_errors=True)


def case_nccl_in(gj, env):
    p = subprocess.run([gj, PROG, "nccl"], env=env, capture_output=True, text=True, timeout=90)
    out, err = p.stdout, p.stderr
    check(p.returncode == 0, f"the job ends 0, got {p.returncode}:\n{out}{err}")
    state = env["GJ_STATE_DIR"]
    for r in (0, 1):
        check(f"RANK {r} nccl {state}/nccl/nccl-rank{r}.log" in out, f"rank {r} got NCCL_DEBUG_FILE in gj's folder:\n{out}")
    check(not os.path.exists(f"{state}/nccl/nccl-rank0.log"), "rank 0 deleted its NCCL file")
    lines = [l for l in err.splitlines() if "NCCL transport:" in l]
    check(len(lines) == 1 and lines[0].endswith("NCCL transport: IB (mlx5_0:1/IB) on 1 pod(s), NCCL 2.18.5+cuda12.2")
          and "info]" in lines[0], f"one info line names rank 0's IB, its device and NCCL's version:\n{err}")
    check(re.search(r"warning\] NCCL: ranks of pod job-master-0 use different networks \(IB, Socket\); "
                    r"check NCCL_IB_HCA and NCCL_SOCKET_IFNAME", err),
          f"a warning names rank 1's sockets (read at its end) against rank 0's IB (read while it ran):\n{err}")
    # A user's own NCCL_DEBUG: their settings stand, gj sets no file, and there is no line.
    p = subprocess.run([gj, PROG, "nccl"], env=dict(env, NCCL_DEBUG="WARN"), capture_output=True, text=True, timeout=90)
    check(p.returncode == 0 and "RANK 0 nccl \n" in p.stdout, f"no NCCL_DEBUG_FILE with the user's NCCL_DEBUG:\n{p.stdout}{p.stderr}")
    check("NCCL transport:" not in p.stderr, f"no transport line without gj's file:\n{p.stderr}")


def main():
    gj, case, flavour = sys.argv[1], sys.argv[2], sys.argv[3]
    try:
        with tempfile.TemporaryDirectory() as scratch:
            env = base_env(flavour, scratch)
            if case == "stop-pod":
                case_stop_pod(gj, env)
            elif case in ("stop", "stop-deaf"):
                case_stop(gj, env, case == "stop-deaf")
            elif case == "metrics":
                case_metrics(gj, env, scratch)
            elif case == "nccl":
                case_nccl(gj, env)
            elif case == "gpu-metrics":
                case_gpu_metrics(gj, env, sys.argv[4])
            elif case in ("blocked", "sigstop", "phase"):
                env["OMP_NUM_THREADS"] = "1"
                case_hang(gj, env, case)
            else:
                raise Fail(f"unknown case {case}")
    except Skip as e:
        print(f"SKIP {e}")
        return SKIP
    except Fail as e:
        print(f"FAIL {case} {flavour}: {e}")
        return 1
    print(f"PASS {case} {flavour}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
