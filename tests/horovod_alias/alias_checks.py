#!/usr/bin/env python3
"""gj-mpirun's horovod alias end to end, real mpiexec at 2 ranks (master-only job), the job's
interpreter given as argv[2]:

  on        `import horovod.torch` is gj.torch in every rank, horovod.__version__ is gj's,
            horovod.__file__ is the alias's; `horovod is gj` said once (rank 0); `import
            horovod.spark` is an ImportError naming the alias and what gj provides
  off       `import horovod` fails as it does without gj-mpirun (ModuleNotFoundError)
  refused   a stand-in `horovod` package on PYTHONPATH: exit 3 before any rank starts, one line
            naming both and how to choose
  gj wins   the same with GJ_HOROVOD_ALIAS=gj: the alias runs and says what it shadows
  horovod   the same with GJ_HOROVOD_ALIAS=horovod: `import horovod` is the stand-in
  plain     without gj-mpirun, the documented PYTHONPATH entry: horovod.torch is gj.torch; beside
            the stand-in, `import horovod` is an ImportError naming both

    alias_checks.py <gj-mpirun> <python>
Prints FAIL lines and exits 1 on a failure; OK at the end.
"""

import os
import subprocess
import sys
import tempfile

RANK_SCRIPT = r'''
import sys
mode = sys.argv[1]


def result(text):
    # One write per line: both ranks share mpiexec's output, and print()'s separate writes of its
    # parts interleave there ("RANK-RESULT x:RANK-RESULT x: ...").
    sys.stdout.write("RANK-RESULT " + text + "\n")
    sys.stdout.flush()


try:
    import horovod
except ModuleNotFoundError as e:
    result(f"no-horovod: {e}")
    sys.exit(0)
if mode == "standin":
    result(f"standin: {horovod.__file__}")
    sys.exit(0)
import horovod.torch as hvd
import gj, gj.torch
assert hvd is gj.torch and sys.modules["horovod.torch"] is gj.torch, hvd
assert horovod.__version__ == gj.__version__, horovod.__version__
assert horovod.__file__.endswith("horovod_alias/horovod/__init__.py"), horovod.__file__
hvd.init()
try:
    import horovod.spark
except ImportError as e:
    result(f"spark: {e}")
result(f"alias rank {hvd.rank()} of {hvd.size()}")
'''

failures = []


def check(ok, what, out):
    if not ok:
        failures.append(what)
        print("FAIL: " + what + "\n--- output ---\n" + out + "\n--------------")


def run(gj_mpirun, python, workdir, mode, extra_env, flags):
    env = dict(os.environ, GJ_TRAINING_ROLE="master", GJ_TRAINING_VC_JOB_NAME="local",
               GJ_TRAINING_POD_NAME="local-master-0", GJ_TRAINING_MASTER_REPLICAS="1",
               GJ_TRAINING_MASTER_CPU_LIMIT="2", GJ_TRAINING_MASTER_GPU_LIMIT="0", GJ_TRAINING_WORKER_REPLICAS="0",
               GJ_TRAINING_WORKER_CPU_LIMIT="0", GJ_TRAINING_WORKER_GPU_LIMIT="0", MPI_HOST="")
    env.pop("GJ_HOROVOD_ALIAS", None)
    env.update(extra_env)
    script = os.path.join(workdir, "rank.py")
    p = subprocess.run([gj_mpirun, "--no-sshd", "--master-host", "localhost", "--python", python, *flags, script, mode],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
    return p.returncode, p.stdout


def main(gj_mpirun, python):
    with tempfile.TemporaryDirectory(prefix="gj-horovod-alias-") as work:
        with open(os.path.join(work, "rank.py"), "w") as f:
            f.write(RANK_SCRIPT)
        standin = os.path.join(work, "standin")
        os.makedirs(os.path.join(standin, "horovod"))
        with open(os.path.join(standin, "horovod", "__init__.py"), "w") as f:
            f.write("__version__ = '0.28.1'  # a stand-in for an installed Horovod\n")
        base = os.environ.get("PYTHONPATH", "")

        code, out = run(gj_mpirun, python, work, "alias", {}, ["--horovod-alias"])
        check(code == 0 and out.count("RANK-RESULT alias rank") == 2, "on: both ranks import horovod.torch as gj.torch",
              out)
        check(sum(line.startswith("horovod is gj ") for line in out.splitlines()) == 1, "on: `horovod is gj` said exactly once (rank 0)", out)
        check(out.count("RANK-RESULT spark: horovod.spark: gj's horovod alias") == 2 and "provides horovod.torch" in out,
              "on: import horovod.spark is an ImportError naming the alias and what gj provides", out)

        code, out = run(gj_mpirun, python, work, "alias", {"GJ_HOROVOD_ALIAS": "0"}, [])
        check(code == 0 and out.count("RANK-RESULT no-horovod: No module named 'horovod'") == 2,
              "off: import horovod is ModuleNotFoundError on both ranks", out)

        with_standin = {"PYTHONPATH": standin + (":" + base if base else "")}
        code, out = run(gj_mpirun, python, work, "alias", with_standin, ["--horovod-alias"])
        refusal = [line for line in out.splitlines() if "GJ_HOROVOD_ALIAS=gj" in line]
        check(code == 3 and "RANK-RESULT" not in out and len(refusal) == 1 and "Horovod" in refusal[0]
              and standin in refusal[0] and "horovod_alias" in refusal[0] and "GJ_HOROVOD_ALIAS=horovod" in refusal[0],
              "refused: exit 3, no rank started, one line naming both and how to choose", out)

        code, out = run(gj_mpirun, python, work, "alias", dict(with_standin, GJ_HOROVOD_ALIAS="gj"), [])
        check(code == 0 and out.count("RANK-RESULT alias rank") == 2 and "shadows Horovod" in out,
              "gj wins: the alias runs beside the stand-in and says so", out)

        code, out = run(gj_mpirun, python, work, "standin", dict(with_standin, GJ_HOROVOD_ALIAS="horovod"), [])
        check(code == 0 and out.count("RANK-RESULT standin: " + os.path.join(standin, "horovod", "__init__.py")) == 2,
              "horovod wins: import horovod is the stand-in on both ranks", out)
        # Without gj-mpirun: the documented PYTHONPATH entry, in one plain process.
        import gj
        alias = os.path.join(os.path.dirname(gj.__file__), "horovod_alias")
        plain = dict(os.environ, PYTHONPATH=alias + (":" + base if base else ""))
        plain.pop("GJ_HOROVOD_ALIAS", None)
        p = subprocess.run([python, os.path.join(work, "rank.py"), "alias"], env=plain, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=120)
        check(p.returncode == 0 and "RANK-RESULT alias rank 0 of 1" in p.stdout and "horovod is gj " in p.stdout,
              "without gj-mpirun: the PYTHONPATH entry alone makes horovod.torch gj.torch", p.stdout)
        plain["PYTHONPATH"] = alias + ":" + standin + (":" + base if base else "")
        p = subprocess.run([python, "-c", "import horovod"], env=plain, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=120)
        check(p.returncode != 0 and "ImportError: gj's horovod alias (" + alias in p.stdout
              and "Horovod (" + os.path.join(standin, "horovod") in p.stdout and "GJ_HOROVOD_ALIAS=gj" in p.stdout,
              "without gj-mpirun beside a stand-in: import horovod is an ImportError naming both", p.stdout)
    if failures:
        return 1
    print("OK: horovod alias on, off, refused beside a stand-in Horovod, gj wins, horovod wins, without gj-mpirun")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
