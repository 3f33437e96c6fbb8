#!/usr/bin/env python3
"""StopOnRequestCallback through the real gj-mpirun (master-only, real Open MPI mpiexec, 2 ranks)
with examples/python/keras_resume.py, on the Keras that TF_USE_LEGACY_KERAS picks: SIGTERM to the
master mid-fit -> both ranks stop after the same batch, rank 0 saved the weights and that epoch
and batch, the job ends 0 within GJ_STOP_GRACE; run again, every rank goes on from that epoch and
the fit ends.

Usage: stop_check.py <gj-mpirun> <python of the TF environment>
Exit: 0 pass, 1 fail, 77 skip.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(ROOT, "tests", "agent"))
from rank_failure_tests import Fail, Skip, base_env, check  # noqa: E402

EXAMPLE = os.path.join(ROOT, "examples", "python", "keras_resume.py")


def main():
    gj, python = os.path.abspath(sys.argv[1]), sys.argv[2]
    scratch = tempfile.mkdtemp(prefix="gj-keras-stop-")
    keras = "Keras 2" if os.environ.get("TF_USE_LEGACY_KERAS") == "1" else "Keras 3"
    try:
        env = base_env("openmpi", scratch)
        env.update(GJ_PYTHON=python, GJ_MAX_RESTARTS="1", GJ_STOP_GRACE="25")
        ckpt = os.path.join(scratch, "ckpt", "model.weights.h5")
        args = [gj, EXAMPLE, "--checkpoint", ckpt, "--epochs", "3", "--batch-seconds", "0.02"]
        p = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines, started = [], 0
        while started < 2:
            line = p.stdout.readline()
            if not line:
                break
            lines.append(line)
            started += re.match(r"rank \d training$", line) is not None
        check(started == 2, "the ranks did not start training\n" + "".join(lines))
        time.sleep(0.3)  # into the first epoch (32 batches of 20 ms and more)
        sent = time.time()
        p.send_signal(signal.SIGTERM)
        rest, _ = p.communicate(timeout=90)
        took = time.time() - sent
        out = "".join(lines) + rest
        check(p.returncode == 0, f"gj-mpirun exited {p.returncode} after the stop, want 0\n{out}")
        check(took < 25, f"the job took {took:.1f} s to end after SIGTERM (GJ_STOP_GRACE=25)\n{out}")
        stops = {int(r): (int(e), int(b)) for r, e, b in re.findall(r"^rank (\d) STOP at epoch (\d+) batch (\d+)$", out, re.M)}
        check(set(stops) == {0, 1}, f"want both ranks to report where they stopped, got {stops}\n{out}")
        check(stops[0] == stops[1], f"the ranks stopped at different batches {stops}\n{out}")
        with open(ckpt + ".stop.json") as f:
            saved = json.load(f)
        check((saved["epoch"], saved["batch"]) == stops[0], f"rank 0 saved {saved}, not the stop {stops[0]}")
        check(os.path.exists(ckpt), "rank 0 saved no weights")
        check([f for f in os.listdir(os.path.dirname(ckpt)) if f.endswith(".tmp") or ".tmp." in f] == [],
              "a temporary file was left")
        # Again: every rank goes on from the stop's epoch and the fit ends.
        p2 = subprocess.run(args[:-2] + ["--batch-seconds", "0"], env=env, capture_output=True, text=True, timeout=300)
        out2 = p2.stdout + p2.stderr
        check(p2.returncode == 0, f"the resumed run exited {p2.returncode}\n{out2}")
        for r in (0, 1):
            check(f"rank {r} attempt 0 starts at epoch {stops[0][0]}" in out2, f"rank {r} did not resume\n{out2}")
            check(f"rank {r} DONE" in out2, f"rank {r} did not finish\n{out2}")
        print(f"{keras}: both ranks stopped after epoch {stops[0][0]} batch {stops[0][1]}; "
              f"the job ended {took:.2f} s after SIGTERM; resumed and finished")
        print("PASS keras stop")
        return 0
    except Skip as e:
        print(f"SKIP: {e}")
        return 77
    except Fail as e:
        print(f"FAIL keras stop ({keras}): {e}")
        return 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
