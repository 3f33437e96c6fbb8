#!/usr/bin/env python3
"""Inside a running job, through the real gj-mpirun master-only under real mpiexec (2 ranks):
docs/agent.md "Stop requests", "Hangs", "Status lines".

  stop       SIGTERM to gj-mpirun: every rank's program that polls for a stop request hears
             `stop` on its rank socket, leaves by itself within GJ_STOP_GRACE, and the job ends 0
  stop-deaf  a program that never polls: the signal reaches mpiexec at once (no grace wait)

Usage: job_view_tests.py <gj-mpirun> <case> <openmpi|mpich>
Exit: 0 pass, 1 fail, 77 skip.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from rank_failure_tests import Fail, Skip, base_env, check  # noqa: E402

PROG = os.path.join(HERE, "job_view_prog.py")
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


def main():
    gj, case, flavour = sys.argv[1], sys.argv[2], sys.argv[3]
    try:
        with tempfile.TemporaryDirectory() as scratch:
            env = base_env(flavour, scratch)
            if case in ("stop", "stop-deaf"):
                case_stop(gj, env, case == "stop-deaf")
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
