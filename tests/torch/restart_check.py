#!/usr/bin/env python3
"""Restarts and stop requests through the real gj-mpirun (master-only, real Open MPI mpiexec, 2
ranks) with gj.torch training examples/python/torch_resume.py, which keeps its own checkpoints.

kill_once: rank 1 is SIGKILLed once mid-run under GJ_MAX_RESTARTS=2; the job restarts from the
  last checkpoint, ends 0, and its final weights equal an uninterrupted run's bit for bit.
sigterm: SIGTERM to the master while rank 1 is slower than rank 0 (the ranks are at different
  points of a step): every rank reports the same stop step, rank 0's checkpoint holds it, the job
  ends 0 within GJ_STOP_GRACE, and it is not restarted (GJ_MAX_RESTARTS=2).

Usage: restart_check.py <gj-mpirun> <kill_once|sigterm>
Exit: 0 pass, 1 fail, 77 skip.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "agent"))
from rank_failure_tests import Fail, Skip, base_env, check  # noqa: E402

EXAMPLE = os.path.join(ROOT, "examples", "python", "torch_resume.py")
SKIP = 77


def run(gj, env, args, timeout=150):
    p = subprocess.run([gj, EXAMPLE, *args], env=env, capture_output=True, text=True, timeout=timeout)
    return p, p.stdout + p.stderr


def checkpoint_step(path):
    import torch
    return torch.load(path)["step"]


def kill_once(gj, env, scratch):
    steps = ["--steps", "30"]
    plain_ckpt, plain_out = os.path.join(scratch, "plain.pt"), os.path.join(scratch, "plain.bin")
    p, out = run(gj, env, [*steps, "--checkpoint", plain_ckpt, "--out", plain_out])
    check(p.returncode == 0, f"the uninterrupted run exited {p.returncode}\n{out}")
    env = dict(env, GJ_MAX_RESTARTS="2")
    ckpt, final = os.path.join(scratch, "ckpt", "model.pt"), os.path.join(scratch, "final.bin")
    p, out = run(gj, env, [*steps, "--checkpoint", ckpt, "--out", final, "--fail-at", "17", "--fail-rank", "1"])
    check(p.returncode == 0, f"the interrupted run exited {p.returncode}, want 0 after a restart\n{out}")
    check("rank 1 dies at step 17" in out, f"rank 1 did not die\n{out}")
    check(re.search(r"attempt 1 of 3 failed after [0-9.]+ s \(rank failure: rank 1 .*killed by SIGKILL.*\); "
                    r"starting attempt 2 of 3", out), f"no restart line\n{out}")
    m = re.search(r"rank 1 attempt 1 starts at step (\d+)", out)
    check(m and 15 <= int(m.group(1)) <= 17, f"the second attempt did not go on from the last checkpoint\n{out}")
    check(out.count("rank failure: rank 1") >= 1 and "attempt 2 of 3 failed" not in out, out)
    with open(plain_out, "rb") as a, open(final, "rb") as b:
        check(a.read() == b.read(), "the final weights differ from the uninterrupted run's")
    print(f"restarted at step {m.group(1)}; final weights equal bit for bit")


def sigterm(gj, env, scratch):
    env = dict(env, GJ_MAX_RESTARTS="2", GJ_STOP_GRACE="20")
    ckpt = os.path.join(scratch, "model.pt")
    args = [EXAMPLE, "--steps", "100000", "--every", "1000000", "--step-seconds", "0.01", "--slow-rank", "1",
            "--checkpoint", ckpt]
    p = subprocess.Popen([gj, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    started = 0
    deadline = time.time() + 90
    while started < 2 and time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        lines.append(line)
        started += "attempt 0 starts at step 0" in line
    check(started == 2, "the ranks did not start\n" + "".join(lines))
    time.sleep(1.5)
    sent = time.time()
    p.send_signal(signal.SIGTERM)
    rest, _ = p.communicate(timeout=60)
    took = time.time() - sent
    out = "".join(lines) + rest
    check(p.returncode == 0, f"gj-mpirun exited {p.returncode} after the stop, want 0\n{out}")
    check(took < 20, f"the job took {took:.1f} s to end after SIGTERM (GJ_STOP_GRACE=20)\n{out}")
    stops = {int(r): int(s) for r, s in re.findall(r"^rank (\d) STOP at step (\d+)$", out, re.M)}
    check(set(stops) == {0, 1}, f"want both ranks to report their stop step, got {stops}\n{out}")
    check(stops[0] == stops[1], f"the ranks stopped at different steps {stops}\n{out}")
    check(checkpoint_step(ckpt) == stops[0], f"rank 0's checkpoint holds step {checkpoint_step(ckpt)}, "
                                             f"not the stop step {stops[0]}")
    check("starting attempt 2" not in out, f"a stopped job was restarted\n{out}")
    print(f"both ranks stopped at step {stops[0]}; the job ended {took:.2f} s after SIGTERM")


def main():
    gj, case = os.path.abspath(sys.argv[1]), sys.argv[2]
    scratch = tempfile.mkdtemp(prefix="gj-restart-")
    try:
        env = base_env("openmpi", scratch)
        env.setdefault("OMP_NUM_THREADS", "1")
        {"kill_once": kill_once, "sigterm": sigterm}[case](gj, env, scratch)
        print(f"PASS {case}")
        return 0
    except Skip as e:
        print(f"SKIP {case}: {e}")
        return SKIP
    except Fail as e:
        print(f"FAIL {case}: {e}")
        return 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
