#!/usr/bin/env python3
"""Process tests of the real static gj-mpirun binary.

Stub `mpiexec` and `sshd` programs (shell scripts written per test) record their argv and
environment, so the tests prove which command gj-mpirun execs and that the stub's exit status
becomes gj-mpirun's. Environment overrides (GJ_MPIEXEC, GJ_SSHD, GJ_STATE_DIR, GJ_SSH_DIR,
--no-wait) keep everything out of root paths.

Usage: binary_tests.py <gj-mpirun> <test name>|all [extra args for the test]
"""
import json
import re
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

GJ = None
EXTRA = []

STUB_MPIEXEC = r"""#!/bin/sh
if [ "$1" = "--version" ]; then
  case "$STUB_VERSION_MODE" in
    hang) exec sleep "${STUB_SLEEP:-1000}" ;;
    flood) exec yes "${STUB_VERSION:-mpiexec (OpenRTE) 4.1.4}" ;;
  esac
  echo "${STUB_VERSION:-mpiexec (OpenRTE) 4.1.4}"; exit 0
fi
out="$(dirname "$0")/mpiexec.argv"
: > "$out"
for a in "$@"; do printf '%s\0' "$a" >> "$out"; done
env > "$(dirname "$0")/mpiexec.env"
case "$STUB_MODE" in
  exit:*) exit "${STUB_MODE#exit:}" ;;
  signal:*) kill -s "${STUB_MODE#signal:}" $$ ; sleep 5 ;;
esac
exit 0
"""

STUB_SSHD = r"""#!/bin/sh
out="$(dirname "$0")/sshd.argv"
: > "$out"
for a in "$@"; do printf '%s\0' "$a" >> "$out"; done
[ -n "${STUB_SSHD_SLEEP:-}" ] && [ "$1" = -D ] && exec sleep "$STUB_SSHD_SLEEP"
exit "${STUB_SSHD_EXIT:-0}"
"""


class Fail(Exception):
    pass


class Skip(Exception):
    """This machine lacks what the test needs: reported as a skip (exit 77, ctest's
    SKIP_RETURN_CODE), never as a pass."""


SKIP_RETURN_CODE = 77


def skip(why):
    """Skip, except under CI=true, where the machine provides root, sshd, ssh-keygen and unshare:
    there a missing one is a failure, so a test cannot vanish from CI's results."""
    if os.environ.get("CI") == "true":
        raise Fail(f"CI=true and {why}: CI provides it, so this is a failure, not a skip")
    raise Skip(why)


def check(cond, what):
    if not cond:
        raise Fail(what)


def path_is_private(path):
    """True when no directory from path up to / is writable by group or others."""
    path = os.path.abspath(path)
    while True:
        st = os.stat(path)
        if st.st_mode & 0o022 or st.st_uid not in (0, os.getuid()):
            return False
        if path == "/":
            return True
        path = os.path.dirname(path)


def safe_scratch_base():
    """GJ_TEST_TMPDIR, else the working dir (ctest runs us in the build tree) when no ancestor
    is group/world-writable, else /run (root)."""
    for base in (os.environ.get("GJ_TEST_TMPDIR", ""), os.getcwd(), "/run"):
        if base and os.path.isdir(base) and os.access(base, os.W_OK) and path_is_private(base):
            return base
    raise Fail("no scratch directory without group/world-writable ancestors: set GJ_TEST_TMPDIR")


class Sandbox:
    """A temp dir with stubs, a training script and a platform environment."""

    def __init__(self):
        # Not below a group/world-writable directory such as /tmp: sys refuses such a state dir
        # (sshd's StrictModes would). The build tree may itself be below /tmp (a CI clone).
        self.dir = tempfile.mkdtemp(prefix="gj-agent-test-", dir=safe_scratch_base())
        self.bin = os.path.join(self.dir, "bin")
        os.makedirs(self.bin)
        self.mpiexec = self._write(os.path.join(self.bin, "mpiexec"), STUB_MPIEXEC, 0o755)
        self.sshd = self._write(os.path.join(self.bin, "sshd"), STUB_SSHD, 0o755)
        self.script = self._write(os.path.join(self.dir, "train.sh"), "#!/bin/sh\nexit 0\n", 0o755)
        self.py = self._write(os.path.join(self.dir, "train.py"), "print('hi')\n", 0o644)
        self.state = os.path.join(self.dir, "state")
        # The mounted ssh secret as Volcano's ssh plugin writes it (group-readable, like a
        # Kubernetes secret volume); the key content is never used by the stubs.
        self.ssh = os.path.join(self.dir, "ssh")
        os.makedirs(self.ssh)
        self._write(os.path.join(self.ssh, "id_rsa"), "not a real key\n", 0o644)
        self._write(os.path.join(self.ssh, "authorized_keys"), "", 0o644)

    @staticmethod
    def _write(path, text, mode):
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        return path

    def env(self, master_cpu="4", master_gpu="0", worker_cpu="4", worker_gpu="0", replicas="2",
            mpi_host="job-worker-0.job,job-worker-1.job", role="master"):
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            # Every container has one (the runtime sets it); Open MPI 5 refuses to start without.
            "HOME": os.environ.get("HOME", "/root"),
            "GJ_TRAINING_ROLE": role,
            "GJ_TRAINING_VC_JOB_NAME": "job",
            "GJ_TRAINING_POD_NAME": "job-master-0",
            "GJ_TRAINING_MASTER_CPU_LIMIT": master_cpu,
            "GJ_TRAINING_MASTER_GPU_LIMIT": master_gpu,
            "GJ_TRAINING_MASTER_REPLICAS": "1",
            "GJ_TRAINING_WORKER_CPU_LIMIT": worker_cpu,
            "GJ_TRAINING_WORKER_GPU_LIMIT": worker_gpu,
            "GJ_TRAINING_WORKER_REPLICAS": replicas,
            "GJ_MPIEXEC": self.mpiexec,
            "GJ_SSHD": self.sshd,
            "GJ_STATE_DIR": self.state,
            "GJ_SSH_DIR": self.ssh,
            "GJ_NO_WAIT": "1",
            # The stub sshd does not listen; the master's own sshd is covered by tests/sys
            # (real sshd) and tests/multihost.
            "GJ_NO_SSHD": "1",
        }
        if mpi_host is not None:
            env["MPI_HOST"] = mpi_host
        return env

    def run(self, args, env, timeout=20, cwd=None):
        return subprocess.run([GJ] + args, env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd)

    def recorded(self, name):
        path = os.path.join(self.bin, name + ".argv")
        if not os.path.exists(path):
            return None
        with open(path, "rb") as f:
            data = f.read()
        return [a.decode() for a in data.split(b"\0")[:-1]]

    def use_real_keypair(self):
        """Replaces the fake key by a real ed25519 pair that authorized_keys accepts; returns the
        private key's path (mode 0644, group-readable like a mounted secret)."""
        key = os.path.join(self.ssh, "id_ed25519")
        os.unlink(os.path.join(self.ssh, "id_rsa"))
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key], check=True)
        shutil.copy(key + ".pub", os.path.join(self.ssh, "authorized_keys"))
        os.chmod(key, 0o644)
        return key

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def real_sshd(test):
    """The machine's sshd when this test can run a real one (root, sshd, ssh-keygen), else None."""
    sshd = shutil.which("sshd") or "/usr/sbin/sshd"
    if os.geteuid() != 0 or not os.path.exists(sshd) or not shutil.which("ssh-keygen"):
        skip(f"{test} needs root, sshd and ssh-keygen")
    return sshd


def expect_rc(r, want, what):
    check(r.returncode == want, f"{what}: exit {r.returncode}, want {want}\nstdout: {r.stdout}\nstderr: {r.stderr}")


def ompi_head(mpiexec, hosts, np):
    return [mpiexec, "--allow-run-as-root", "--host", hosts, "-np", str(np), "--map-by", "slot"]


# ---- dry run -----------------------------------------------------------------------------

PLATFORM_CASES = [
    # name, env kwargs, MPI_HOSTS, MPI_NP
    ("both-cpu", dict(master_cpu="4", worker_cpu="8"), "job-master-0.job:4,job-worker-0.job:8,job-worker-1.job:8", 20),
    ("both-gpu", dict(master_gpu="8", worker_gpu="8"), "job-master-0.job:8,job-worker-0.job:8,job-worker-1.job:8", 24),
    ("workers-only", dict(master_gpu="0", worker_gpu="4"), "job-worker-0.job:4,job-worker-1.job:4", 8),
    ("master-only", dict(master_gpu="2", worker_gpu="0"), "job-master-0.job:2", 2),
    ("no-workers", dict(master_cpu="3", replicas="0", mpi_host=""), "job-master-0.job:3", 3),
]


def test_dry_run_text(sb):
    for name, kw, hosts, np in PLATFORM_CASES:
        r = sb.run(["--dry-run", sb.py, "--lr", "0.1"], sb.env(**kw))
        expect_rc(r, 0, name)
        lines = r.stdout.splitlines()
        check(lines[0] == f"MPI_HOSTS={hosts}", f"{name}: first line {lines[0]!r}")
        check(lines[1] == f"MPI_NP={np}", f"{name}: second line {lines[1]!r}")
        argv = shlex.split(lines[-1])
        check(argv[:8] == ompi_head(sb.mpiexec, hosts, np), f"{name}: command {argv[:8]}")
        check(argv[-4:] == ["python3", sb.py, "--lr", "0.1"], f"{name}: tail {argv[-4:]}")
    check(sb.recorded("mpiexec") is None, "dry run ran mpiexec (beyond --version)")
    check(sb.recorded("sshd") is None, "dry run started sshd")
    check(not os.path.exists(sb.state), "dry run created the state dir")


def test_script_resolution(sb):
    """Ranks on other nodes do not share the launcher's cwd: relative scripts become absolute;
    a bare name not in the cwd is looked up in PATH."""
    true_path = shutil.which("true", path=sb.env()["PATH"])
    cases = [("train.sh", [sb.script]), ("./train.sh", [sb.script]), ("train.py", ["python3", sb.py]),
             ("true", [os.path.realpath(true_path)] if true_path else None)]
    for given, want in cases:
        if want is None:
            continue
        r = sb.run(["--dry-run", "--json", given, "arg"], sb.env(), cwd=sb.dir)
        expect_rc(r, 0, given)
        argv = json.loads(r.stdout)["argv"]
        got = argv[-len(want) - 1:]
        if given == "true":
            got = [os.path.realpath(got[0])] + got[1:]
        check(got == want + ["arg"], f"{given}: argv tail {got}, want {want + ['arg']}")


def test_volcano_hosts_file(sb):
    """MPI_HOST absent: the hosts come from /etc/volcano/worker.host (Volcano's svc plugin).
    Runs in a private mount namespace with a tmpfs over /etc, so the machine's /etc is untouched."""
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        skip("volcano_hosts_file needs root and unshare")
    hosts = os.path.join(sb.dir, "worker.host")
    with open(hosts, "w") as f:
        f.write("job-worker-0.job\njob-worker-1.job\n")
    inner = ("mount -t tmpfs tmpfs /etc && mkdir /etc/volcano && cp \"$0\" /etc/volcano/worker.host && "
             "exec \"$1\" --dry-run --json --mpi openmpi \"$2\"")
    r = subprocess.run([unshare, "--mount", "--propagation", "private", "sh", "-c", inner, hosts, GJ, sb.script],
                       env=sb.env(mpi_host=None), capture_output=True, text=True, timeout=30)
    expect_rc(r, 0, "hosts from /etc/volcano/worker.host")
    got = [h["host"] for h in json.loads(r.stdout)["hosts"]]
    check(got == ["job-master-0.job", "job-worker-0.job", "job-worker-1.job"], f"hosts {got}")


def test_dry_run_json(sb):
    for name, kw, hosts, np in PLATFORM_CASES:
        r = sb.run(["--dry-run", "--json", sb.script, "x y"], sb.env(**kw))
        expect_rc(r, 0, name)
        obj = json.loads(r.stdout)
        want_hosts = [{"host": h.split(":")[0], "slots": int(h.split(":")[1])} for h in hosts.split(",")]
        check(obj["role"] == "master", name)
        check([{"host": h["host"], "slots": h["slots"]} for h in obj["hosts"]] == want_hosts,
              f"{name}: hosts {obj['hosts']}")
        check(all(isinstance(h["omp_num_threads"], int) and h["omp_num_threads"] >= 1 for h in obj["hosts"]),
              f"{name}: threads per host {obj['hosts']}")
        check(obj["np"] == np, f"{name}: np {obj['np']}")
        check(obj["argv"][:8] == ompi_head(sb.mpiexec, hosts, np), f"{name}: argv {obj['argv'][:8]}")
        check(obj["argv"][-2:] == [sb.script, "x y"], f"{name}: argv tail")
        check(obj["hostfile"] is None, name)


def test_dry_run_worker(sb):
    env = sb.env(role="worker")
    r = sb.run(["--dry-run", sb.script], env)
    expect_rc(r, 0, "worker dry run")
    argv = shlex.split(r.stdout.splitlines()[-1])
    check(argv[:3] == [sb.sshd, "-D", "-e"], f"worker command {argv}")
    r = sb.run(["--dry-run", "--json"], env)
    expect_rc(r, 0, "worker json")
    obj = json.loads(r.stdout)
    check(obj["role"] == "worker" and obj["argv"][:3] == [sb.sshd, "-D", "-e"], obj)
    check("GJ_TRAINING_ROLE" in obj["session_env"] and "HOSTNAME" not in obj["session_env"], obj["session_env"])
    check(sb.recorded("sshd") is None, "worker dry run started sshd")


def test_dry_run_flavours(sb):
    cases = [
        ("mpirun (Open MPI) 5.0.3", "openmpi5", "--prtemca"),
        ("HYDRA build details:\n    Version: 4.1", "mpich", "-launcher"),
        ("Intel(R) MPI Library for Linux* OS, Version 2021.10", "intel", "-bootstrap"),
        # Intel MPI's own banner, captured from impi-rt 2021.18.1 (the version CI runs)
        (open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "impi-rt-2021.18.1.version")).read(),
         "intel", "-bootstrap-exec-args"),
    ]
    for version, flavour, marker in cases:
        env = sb.env(master_gpu="8", worker_gpu="8")
        env["STUB_VERSION"] = version
        r = sb.run(["--dry-run", "--json", sb.script], env)
        expect_rc(r, 0, flavour)
        obj = json.loads(r.stdout)
        check(obj["mpi"] == flavour, f"detected {obj['mpi']}, want {flavour}")
        check(marker in obj["argv"], f"{flavour}: {marker} not in {obj['argv']}")
        r = sb.run(["--dry-run", "--json", "--mpi", flavour, sb.script], sb.env())
        check(json.loads(r.stdout)["mpi"] == flavour, f"--mpi {flavour}")


def test_known_mpi_defect_warning(sb):
    def hydra(version):
        return ("HYDRA build details:\n    Version:                                 " + version +
                "\n    Configure options:                       '--with-device=ch4:ucx' '--prefix=/usr'")
    for version, warned in (("4.0.2", True), ("4.2.0", False)):
        env = sb.env()
        env["STUB_VERSION"] = hydra(version)
        r = sb.run(["--dry-run", sb.script], env)
        expect_rc(r, 0, f"MPICH {version}")
        lines = [l for l in r.stderr.splitlines() if "deadlock in MPI_Finalize" in l]
        check(len(lines) == (1 if warned else 0), f"MPICH {version}: defect warnings {lines}")
        if warned:
            check("warning] MPICH 4.0.2 with ch4:ucx" in lines[0], f"one warning line naming it: {lines[0]}")


def test_dry_run_secrets(sb):
    env = sb.env()
    env.update({"HF_TOKEN": "hf_supersecret1", "MY_PASSWORD": "supersecret2"})
    args = ["--dry-run", "--export", "HF_TOKEN", "--export", "API_KEY=supersecret3", "--export", "MY_*",
            "--mpi", "mpich", "--export", "DB_SECRET=supersecret4"]
    for extra in ([], ["--json"]):
        r = sb.run(args + extra + ["--log-level", "debug", sb.script], env)
        expect_rc(r, 0, "secrets")
        for s in ("supersecret1", "supersecret2", "supersecret3", "supersecret4"):
            check(s not in r.stdout and s not in r.stderr, f"{s} printed:\n{r.stdout}\n{r.stderr}")
        check("<redacted>" in r.stdout, r.stdout)
        check("HF_TOKEN" in r.stdout and "MY_PASSWORD" in r.stdout, r.stdout)


def test_dry_run_large_hosts_file(sb):
    n = int(EXTRA[0]) if EXTRA else 10000
    path = os.path.join(sb.dir, "worker.host")
    with open(path, "w") as f:
        for i in range(n):
            f.write(f"job-worker-{i}.job\n")
    env = sb.env(master_gpu="8", worker_gpu="8", replicas=str(n), mpi_host=None)
    env["GJ_HOSTS_FILE"] = path
    t0 = time.monotonic()
    r = sb.run(["--dry-run", "--json", "--mpi", "openmpi", sb.script], env)
    elapsed = time.monotonic() - t0
    expect_rc(r, 0, "10k dry run")
    obj = json.loads(r.stdout)
    check(len(obj["hosts"]) == n + 1 and obj["np"] == 8 * (n + 1), "host count / np")
    check(obj["hostfile"] == os.path.join(sb.state, "hostfile"), f"hostfile {obj['hostfile']}")
    check("--hostfile" in obj["argv"] and "--host" not in obj["argv"], "argv uses --hostfile")
    check(elapsed < 2.0, f"10k-host dry run took {elapsed:.3f} s")
    r = sb.run(["--dry-run", "--mpi", "openmpi", sb.script], env)
    check("# hosts: hostfile " in r.stdout, "text dry run says a hostfile is used")
    print(f"dry run of {n} hosts: {elapsed * 1000:.1f} ms (whole process)")


# ---- bad input ---------------------------------------------------------------------------

def bad_cases(sb):
    def env(**kw):
        return sb.env(**kw)

    def without(name):
        e = sb.env()
        e.pop(name)
        return e

    def with_(**over):
        e = sb.env()
        e.update(over)
        return e

    return [
        # name, env, args, exit code, stderr substring
        ("missing role", without("GJ_TRAINING_ROLE"), None, 3, "GJ_TRAINING_ROLE is not set"),
        ("unknown role", with_(GJ_TRAINING_ROLE="boss"), None, 3, 'GJ_TRAINING_ROLE="boss" is not a known role'),
        ("missing job", without("GJ_TRAINING_VC_JOB_NAME"), None, 3, "GJ_TRAINING_VC_JOB_NAME is not set"),
        ("empty cpu", env(master_cpu=""), None, 3, 'GJ_TRAINING_MASTER_CPU_LIMIT="" is empty'),
        ("non-numeric gpu", env(worker_gpu="two"), None, 3, 'GJ_TRAINING_WORKER_GPU_LIMIT="two" is not'),
        ("negative replicas", env(replicas="-1"), None, 3, 'GJ_TRAINING_WORKER_REPLICAS="-1" is negative'),
        ("overflow", env(master_gpu="99999999999999999999"), None, 3, "overflows"),
        ("master replicas 2", with_(GJ_TRAINING_MASTER_REPLICAS="2"), None, 3, "exactly 1 master"),
        ("np 0", env(master_gpu="0", worker_gpu="4", replicas="0", mpi_host=""), None, 4, "MPI_NP=0"),
        ("0 slots", env(master_cpu="500m"), None, 4, "gives 0 slots"),
        ("bad host", env(mpi_host="a.job,b job"), None, 3, 'MPI_HOST entry 2 "b job" is not a valid DNS host name'),
        ("host with port", env(mpi_host="a.job:22,b.job"), None, 3, "contains ':'"),
        ("host with -", env(mpi_host="-oProxyCommand,b.job"), None, 3, "starts with '-'"),
        ("duplicate", env(mpi_host="a.job,a.job"), None, 3, 'lists "a.job" twice'),
        ("count", env(mpi_host="a.job"), None, 3, "MPI_HOST lists 1 hosts but GJ_TRAINING_WORKER_REPLICAS=2"),
        ("no MPI_HOST", env(mpi_host=None), None, 3, "GJ_TRAINING_WORKER_REPLICAS=2 but MPI_HOST is not set"),
        ("missing script", sb.env(), [os.path.join(sb.dir, "nope.sh")], 127, "not found"),
        ("not executable", sb.env(), [os.path.join(sb.dir, "data.txt")], 126, "is not executable"),
        ("no script", sb.env(), [], 2, "needs the training script"),
        ("missing python", with_(GJ_PYTHON="/nonexistent/python"), [sb.py], 127, "--python/GJ_PYTHON"),
        ("bad flag value", sb.env(), ["--mpi", "lam", sb.script], 3, '--mpi/GJ_MPI="lam"'),
        ("mpiexec args without --", sb.env(), ["--bind-to", "none", sb.script], 2, "end them with `--`"),
        ("bad hosts file", with_(GJ_HOSTS_FILE="/nonexistent/hosts"), None, 3, "GJ_HOSTS_FILE"),
    ]


def test_bad_inputs(sb):
    sb._write(os.path.join(sb.dir, "data.txt"), "x", 0o644)
    for dry in (True, False):
        for name, env, args, code, text in bad_cases(sb):
            argv = (["--dry-run"] if dry else []) + (args if args is not None else [sb.script])
            r = sb.run(argv, env)
            expect_rc(r, code, f"{name} (dry={dry})")
            check(text in r.stderr, f"{name}: {text!r} not in stderr {r.stderr!r}")
            errors = [l for l in r.stderr.splitlines() if " error]" in l]
            check(len(errors) == 1, f"{name}: want one error line, got {r.stderr!r}")
            check(r.stdout == "", f"{name}: stdout {r.stdout!r}")
            check(sb.recorded("mpiexec") is None, f"{name}: mpiexec started")
            check(sb.recorded("sshd") is None, f"{name}: sshd started")


# ---- the exec path -----------------------------------------------------------------------

def without_rank_exec(argv):
    """argv with the rank-exec wrapper (gj-mpirun --rank-exec SPEC [--monitor PORT,TOKEN,ADDR...] --)
    removed, checked present."""
    i = argv.index("--rank-exec")
    end = i + 2
    if argv[end] == "--monitor":
        check(re.fullmatch(r"\d+,[0-9a-f]{16}(,[0-9a-fA-F.:]+)+", argv[end + 1]), f"monitor endpoint {argv[end + 1]!r}")
        end += 2
    check(argv[i - 1] == GJ and argv[end] == "--", f"rank-exec wrapper {argv[i - 1:end + 1]}")
    return argv[:i - 1] + argv[end + 1:]


def test_rank_env_dry_run(sb):
    """--dry-run names MASTER_ADDR/MASTER_PORT and where they come from; the user's values win;
    --no-rank-env and GJ_RANK_ENV=0 take the wrapper out."""
    r = sb.run(["--dry-run", sb.py], sb.env())
    expect_rc(r, 0, "rank env dry run")
    check("# rank env: MASTER_ADDR=job-master-0.job (the first rank's host)" in r.stdout, r.stdout)
    check(re.search(r"# rank env: MASTER_PORT=\d+ \(a free port on job-master-0.job", r.stdout), r.stdout)
    argv = shlex.split(r.stdout.splitlines()[-1])
    check(without_rank_exec(argv)[-2:] == ["python3", sb.py], f"argv {argv}")
    env = sb.env()
    env.update(MASTER_ADDR="10.1.2.3", MASTER_PORT="4242")
    j = json.loads(sb.run(["--dry-run", "--json", sb.py], env).stdout)
    check(j["rank_env"]["MASTER_ADDR"] == "10.1.2.3" and j["rank_env"]["MASTER_PORT"] == 4242, j["rank_env"])
    check("10.1.2.3,4242,4/4*3" in j["argv"], f"spec in argv {j['argv']}")
    for args, extra in ((["--no-rank-env"], {}), ([], {"GJ_RANK_ENV": "0"})):
        env = sb.env()
        env.update(extra)
        j = json.loads(sb.run(["--dry-run", "--json"] + args + [sb.py], env).stdout)
        check(j["rank_env"] is None and "--rank-exec" not in j["argv"], f"{args} {extra}: {j['argv']}")
    env = sb.env()
    env["MASTER_PORT"] = "http"
    r = sb.run(["--dry-run", sb.py], env)
    expect_rc(r, 3, "bad MASTER_PORT")
    check('MASTER_PORT="http"' in r.stderr, r.stderr)


def test_rank_exec_mode(sb):
    """The per-rank mode alone: from Open MPI's and hydra's variables, user values kept, exec."""
    base = {"PATH": os.environ["PATH"]}
    show = ["/bin/sh", "-c", "env | grep -E '^(RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|GROUP_RANK|MASTER_ADDR|MASTER_PORT)=' | sort"]
    cases = [
        ({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "6", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
          "OMPI_COMM_WORLD_LOCAL_SIZE": "4"}, "m.job,1234,2*1,4*1",
         ["GROUP_RANK=1", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=4", "MASTER_ADDR=m.job", "MASTER_PORT=1234", "RANK=3",
          "WORLD_SIZE=6"]),
        ({"PMI_RANK": "5", "PMI_SIZE": "6", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2", "MASTER_PORT": "999"},
         "m.job,1234,2*3",
         ["GROUP_RANK=2", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2", "MASTER_ADDR=m.job", "MASTER_PORT=999", "RANK=5",
          "WORLD_SIZE=6"]),
    ]
    for extra, spec, want in cases:
        env = dict(base, **extra)
        r = subprocess.run([GJ, "--rank-exec", spec, "--"] + show, env=env, capture_output=True, text=True, timeout=30)
        expect_rc(r, 0, spec)
        check(r.stdout.split() == want, f"{spec}: {r.stdout.split()} want {want}")
    r = subprocess.run([GJ, "--rank-exec", "m,1,1*1", "--", "true"], env=base, capture_output=True, text=True, timeout=30)
    expect_rc(r, 3, "outside mpiexec")
    check("neither OMPI_COMM_WORLD_RANK" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr)
    r = subprocess.run([GJ, "--rank-exec", "m,1,1*1", "--", "/nonexistent/x"],
                       env=dict(base, PMI_RANK="0", PMI_SIZE="1"), capture_output=True, text=True, timeout=30)
    expect_rc(r, 127, "missing command")


def test_cpu_binding(sb):
    """The binding and threads chosen from this process's real affinity mask: a pod whose cpuset
    is its CPU limit keeps mpiexec's binding, one that shares the node's cores gets the flavour's
    "none", a binding the user passes wins; OMP_NUM_THREADS per rank in the dry run; the rank
    mode sets it from the spec's CPUs and its local size, and keeps the user's."""
    cpus = sorted(os.sched_getaffinity(0))
    # A GPU master with no workers runs every rank on this pod: 2 ranks, CPU limit 1 or 2.
    def dry(cpuset, cpu_limit, args=(), extra=None):
        env = sb.env(master_cpu=cpu_limit, master_gpu="2", worker_gpu="0", replicas="0", mpi_host="")
        env.update(extra or {})
        r = subprocess.run([GJ, "--dry-run", "--json", "--mpi", "openmpi"] + list(args) + [sb.script], env=env,
                           capture_output=True, text=True, timeout=20,
                           preexec_fn=lambda: os.sched_setaffinity(0, cpuset))
        expect_rc(r, 0, f"dry run cpuset {sorted(cpuset)} limit {cpu_limit}")
        return json.loads(r.stdout)
    own = dry({cpus[0]}, "1")
    check(own["binding"]["mode"] == "mpiexec's default", f"exclusive cpuset: {own['binding']}")
    check("--bind-to" not in own["argv"], f"exclusive cpuset argv {own['argv']}")
    check(own["hosts"][0]["omp_num_threads"] == 1, own["hosts"])
    if len(cpus) >= 2:
        shared = dry(set(cpus), str(len(cpus) - 1))
        check(shared["binding"]["mode"] == "none", f"shared cores: {shared['binding']}")
        check(f"cpuset of {len(cpus)} CPU(s), allocation {len(cpus) - 1}" in shared["binding"]["reason"],
              shared["binding"])
        i = shared["argv"].index("--bind-to")
        check(shared["argv"][i + 1] == "none", shared["argv"])
    else:
        print("note: one CPU here: the shared-cores case is covered by agent.unit and multihost.cpu_binding")
    user = dry({cpus[0]}, "4", ["--bind-to", "core", "--"])
    check(user["binding"]["mode"] == "yours" and "--bind-to core" in user["binding"]["reason"], user["binding"])
    check(user["argv"].count("--bind-to") == 1, user["argv"])
    big = dry(set(cpus), "16")
    check(big["hosts"][0]["omp_num_threads"] == 8, f"16 CPUs / 2 ranks: {big['hosts']}")
    mine = dry(set(cpus), "16", extra={"OMP_NUM_THREADS": "3"})
    check(mine["hosts"][0]["omp_num_threads"] is None and "OMP_NUM_THREADS=3 (yours" in mine["threads"], mine)
    env = sb.env(master_cpu="16", master_gpu="2", worker_gpu="0", replicas="0", mpi_host="")
    r = sb.run(["--dry-run", "--mpi", "mpich", sb.script], env)
    expect_rc(r, 0, "text dry run")
    check("\n# threads: OMP_NUM_THREADS=8 on job-master-0.job (16 CPU(s) / 2 rank(s))" in r.stdout, r.stdout)
    check(re.search(r"^# cpu binding: .+$", r.stdout, re.M), r.stdout)

    base = {"PATH": os.environ["PATH"], "OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2",
            "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}
    show = ["/bin/sh", "-c", "echo threads=${OMP_NUM_THREADS-unset}"]
    quota = cgroup_quota_cpus()  # the rank lowers the spec's CPUs to its own cgroup's quota
    def expected(spec_cpus):
        cpus = [c for c in (spec_cpus, int(quota) if quota else None) if c]
        return f"threads={max(min(cpus) // 2, 1)}" if cpus else "threads=unset"
    for spec, extra, want in (("m,1,2/16*1", {}, expected(16)), ("m,1,2*1", {}, expected(None)),
                              ("m,1,2/16*1", {"OMP_NUM_THREADS": "5"}, "threads=5")):
        r = subprocess.run([GJ, "--rank-exec", spec, "--"] + show, env=dict(base, **extra), capture_output=True,
                           text=True, timeout=30)
        expect_rc(r, 0, spec)
        check(r.stdout.strip() == want, f"rank mode {spec} {extra} (cgroup quota {quota}): {r.stdout!r}, want {want}")


def cgroup_quota_cpus():
    """This process's CFS quota in CPUs (None: unlimited), read as the kernel documents it: the
    test's own oracle for what the rank mode must see."""
    lines = [l.rstrip("\n").split(":", 2) for l in open("/proc/self/cgroup")]
    v2 = [p for i, c, p in lines if i == "0" and c == ""]
    if v2:
        for d in (f"/sys/fs/cgroup{v2[0]}", "/sys/fs/cgroup"):
            if os.path.exists(f"{d}/cpu.max"):
                q, period = open(f"{d}/cpu.max").read().split()
                return None if q == "max" else int(q) / int(period)
    for i, c, p in lines:
        if "cpu" in c.split(","):
            for root in ("/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"):
                for d in (root + p, root):
                    if os.path.exists(f"{d}/cpu.cfs_quota_us"):
                        q = int(open(f"{d}/cpu.cfs_quota_us").read())
                        return None if q < 0 else q / int(open(f"{d}/cpu.cfs_period_us").read())
    return None


def test_mpijob_dry_run(sb):
    """A Kubeflow MPIJob launcher with no GJ_TRAINING_*: hosts, slots, np and the flavour from the
    operator's hostfile and variables, each value's origin in the dry run; the bad and ambiguous
    environments give one line."""
    hostfile = sb._write(os.path.join(sb.dir, "hostfile"),
                         "mpj-worker-0.mpj.ns.svc:2\n\n# comment\nmpj-worker-1.mpj.ns.svc:2\n", 0o444)
    env = {k: v for k, v in sb.env().items() if not k.startswith("GJ_TRAINING_") and k != "MPI_HOST"}
    env.update(K_MPI_JOB_ROLE="launcher", HYDRA_HOST_FILE=hostfile, HOSTNAME="mpj-launcher")
    r = sb.run(["--dry-run", sb.script], env)
    expect_rc(r, 0, "mpijob dry run")
    out = r.stdout
    for want in ("MPI_HOSTS=mpj-worker-0.mpj.ns.svc:2,mpj-worker-1.mpj.ns.svc:2", "MPI_NP=4",
                 "# mpi: mpich (from the operator's HYDRA_HOST_FILE)",
                 "# platform: Kubeflow MPIJob (K_MPI_JOB_ROLE=launcher)",
                 f"# hosts and slots: {hostfile} (from HYDRA_HOST_FILE)", "# np: the sum of the hostfile's slots",
                 "# rank env: MASTER_ADDR=mpj-worker-0.mpj.ns.svc (the first rank's host)",
                 "MASTER_PORT=29500 (torchrun's default"):
        check(want in out, f"dry run lacks {want!r}:\n{out}")
    argv = shlex.split(out.splitlines()[-1])
    check(argv[argv.index("-localhost") + 1] == "mpj-launcher.mpj.ns.svc", f"-localhost in {argv}")
    r = sb.run(["--dry-run", "--json", "-np", "3", "--", sb.script], env)
    expect_rc(r, 0, "mpijob -np")
    j = json.loads(r.stdout)
    check(j["np"] == 3 and "# np: your -np 3" not in j["notes"] and "np: your -np 3" in j["notes"], j)
    check(j["wait_for"] == ["mpj-worker-0.mpj.ns.svc", "mpj-worker-1.mpj.ns.svc"], j["wait_for"])
    bad = dict(env, HYDRA_HOST_FILE=sb._write(os.path.join(sb.dir, "bad"), "a.j:2\nb.j:x\n", 0o444))
    r = sb.run(["--dry-run", sb.script], bad)
    expect_rc(r, 3, "bad hostfile line")
    check('line 2 "b.j:x"' in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr)
    gone = dict(env, HYDRA_HOST_FILE=os.path.join(sb.dir, "absent"))
    r = sb.run(["--dry-run", sb.script], gone)
    expect_rc(r, 3, "no hostfile")
    check("does not exist (K_MPI_JOB_ROLE=launcher)" in r.stderr, r.stderr)
    both = dict(sb.env(), K_MPI_JOB_ROLE="launcher")
    r = sb.run(["--dry-run", sb.script], both)
    expect_rc(r, 0, "both environments")
    check("# both GJ_TRAINING_ROLE and K_MPI_JOB_ROLE are set: using the gj platform's" in r.stdout, r.stdout)
    neither = {k: v for k, v in env.items() if k != "K_MPI_JOB_ROLE"}
    r = sb.run(["--dry-run", sb.script], neither)
    expect_rc(r, 3, "neither environment")
    check("GJ_TRAINING_ROLE is not set (nor K_MPI_JOB_ROLE" in r.stderr, r.stderr)


def test_version_bounded(sb):
    """`mpiexec --version` that never returns: a clear error after GJ_MPI_DETECT_TIMEOUT (the dry
    run falls back to Open MPI 4 and says so); one that floods output is read only so far."""
    env = sb.env()
    marker = f"1000.{os.getpid()}"  # this test's own hanging child (tests run in parallel)
    env.update(STUB_VERSION_MODE="hang", GJ_MPI_DETECT_TIMEOUT="1", STUB_SLEEP=marker)
    t0 = time.monotonic()
    r = sb.run([sb.script], env)
    expect_rc(r, 6, "hanging --version")
    check(time.monotonic() - t0 < 5, f"took {time.monotonic() - t0:.1f} s")
    err = [l for l in r.stderr.splitlines() if " error]" in l]
    check(len(err) == 1 and "did not finish within 1 s" in err[0] and "pass --mpi=" in err[0], r.stderr)
    r = sb.run(["--dry-run", sb.script], env)
    expect_rc(r, 0, "dry run, hanging --version")
    check("assumes Open MPI 4" in r.stderr and "# mpi: openmpi4 (assumed" in r.stdout, r.stdout + r.stderr)
    env["STUB_VERSION_MODE"] = "flood"
    t0 = time.monotonic()
    r = sb.run(["--dry-run", sb.script], env)
    expect_rc(r, 0, "flooding --version")
    check(time.monotonic() - t0 < 5 and "detected from" in r.stdout, r.stdout)
    check_no_process_left("sleep " + marker)


def check_no_process_left(needle):
    left = []
    for _ in range(20):
        left = [p for p in os.listdir("/proc") if p.isdigit() and needle in _cmdline(p)]
        if not left:
            return
        time.sleep(0.05)
    for pid in left:
        os.kill(int(pid), signal.SIGKILL)
    check(False, f"processes {left} ({needle}) outlived gj-mpirun")


def _pid1_of(unshare_pid):
    """The host pid of the first process inside `unshare --pid --fork`."""
    for _ in range(100):
        try:
            with open(f"/proc/{unshare_pid}/task/{unshare_pid}/children") as f:
                kids = f.read().split()
            if kids:
                return int(kids[0])
        except OSError:
            pass
        time.sleep(0.02)
    return None


def terminate_in_phase(sb, args, env, wait_for, as_pid1, what):
    """Starts gj-mpirun, waits until stderr shows `wait_for` (its phase), sends SIGTERM and checks
    exit 143 within 1 s."""
    err_path = os.path.join(sb.dir, "phase.err")

    def in_phase():
        with open(err_path) as f:
            return wait_for in f.read()
    terminate_in_phase_by(sb, args, env, in_phase, as_pid1, what, err_path)


def terminate_in_phase_by(sb, args, env, in_phase, as_pid1, what, err_path=None):
    """terminate_in_phase with the phase told by a predicate."""
    err_path = err_path or os.path.join(sb.dir, "phase.err")
    cmd = [GJ] + args
    if as_pid1:
        cmd = [shutil.which("unshare"), "--pid", "--fork", "--kill-child"] + cmd
    with open(err_path, "w") as err:
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)
    target = _pid1_of(p.pid) if as_pid1 else p.pid
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if in_phase():
            break
        time.sleep(0.05)
    else:
        p.kill()
        check(False, f"{what}: never reached the phase")
    time.sleep(0.3)
    t0 = time.monotonic()
    os.kill(target, signal.SIGTERM)
    try:
        rc = p.wait(timeout=5)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = None
    took = time.monotonic() - t0
    check(rc == 143 and took < 1.0, f"{what}: rc {rc} after {took:.2f} s (want 143 within 1 s)")


def test_sigterm_every_phase(sb):
    """SIGTERM ends gj-mpirun within 1 s with 143 in flavour detection and in the readiness gate,
    as PID 1 (which ignores signals without a handler) and not, leaving no child behind."""
    modes = [False] + ([True] if os.geteuid() == 0 and shutil.which("unshare") else [])
    for as_pid1 in modes:
        env = sb.env()
        marker = f"1000.{os.getpid()}{int(as_pid1)}"  # this test's own hanging child
        env.update(STUB_VERSION_MODE="hang", GJ_MPI_DETECT_TIMEOUT="60", GJ_LOG_LEVEL="debug", STUB_SLEEP=marker)
        terminate_in_phase(sb, [sb.script], env, "detecting the MPI flavour", as_pid1, f"detection (pid1={as_pid1})")
        check_no_process_left("sleep " + marker)
        env = sb.env(replicas="1", mpi_host="localhost")
        env.pop("GJ_NO_WAIT")
        env["GJ_SSH_PORT"] = str(free_port())
        terminate_in_phase(sb, ["--ready-timeout", "60", sb.script], env, "waiting up to 60 s", as_pid1,
                           f"gate (pid1={as_pid1})")


def test_sigterm_sshd_setup(sb):
    """SIGTERM while a worker prepares its sshd (here: an ssh-keygen that never returns): 143
    within 1 s, as PID 1 and not, and the keygen child does not outlive gj-mpirun."""
    modes = [False] + ([True] if os.geteuid() == 0 and shutil.which("unshare") else [])
    for as_pid1 in modes:
        marker = f"1001.{os.getpid()}{int(as_pid1)}"
        keygen = os.path.join(sb.dir, f"hanging-keygen-{int(as_pid1)}")
        with open(keygen, "w") as f:
            f.write(f"#!/bin/sh\necho 'keygen started' >&2\nexec sleep {marker}\n")
        os.chmod(keygen, 0o755)
        env = sb.env(role="worker")
        env.update(GJ_SSH_KEYGEN=keygen, GJ_STATE_DIR=os.path.join(sb.dir, f"state-setup-{int(as_pid1)}"))
        terminate_in_phase_by(sb, [sb.script], env, lambda: any(marker in _cmdline(p) for p in os.listdir("/proc")
                                                                 if p.isdigit()),
                              as_pid1, f"sshd setup (pid1={as_pid1})")
        check_no_process_left("sleep " + marker)


def test_sigterm_gate_stops_sshd(sb):
    """SIGTERM while the gate waits, after the master's own (real) sshd started: 143 and that
    sshd does not outlive gj-mpirun."""
    sshd = real_sshd("sigterm_gate_stops_sshd")
    env = sb.env(replicas="1", mpi_host="never-resolves.invalid")
    for k in ("GJ_NO_WAIT", "GJ_NO_SSHD", "GJ_SSHD"):
        env.pop(k)
    env.update({"GJ_SSHD": sshd, "GJ_SSH_PORT": str(free_port()), "GJ_MASTER_HOST": "127.0.0.1"})
    terminate_in_phase(sb, ["--ready-timeout", "60", sb.script], env, "waiting up to 60 s", False, "gate with sshd")
    check_no_sshd_left(sb)


def test_hostile_inputs(sb):
    """Issue #14's hostile inputs, each refused or handled with one line and the documented code."""
    # Log forging: a newline or ESC in the pod name reaches the log prefix escaped.
    env = sb.env()
    env["GJ_TRAINING_POD_NAME"] = "job-master-0\n[gj-mpirun master@x error] forged\x1b[31m"
    r = sb.run(["--dry-run", sb.script], env)
    check("\x1b" not in r.stderr, f"raw ESC in the log: {r.stderr!r}")
    check(all(l.startswith("[gj-mpirun ") for l in r.stderr.splitlines()), f"forged log line: {r.stderr!r}")
    # A FIFO or a device as the hosts file: refused at once, not read without bound.
    fifo = os.path.join(sb.dir, "hosts.fifo")
    os.mkfifo(fifo)
    for path in (fifo, "/dev/zero"):
        t0 = time.monotonic()
        r = sb.run(["--dry-run", "--hosts-file", path, sb.script], sb.env(mpi_host=None))
        expect_rc(r, 3, f"hosts file {path}")
        check(time.monotonic() - t0 < 5 and "is not a regular file" in r.stderr, r.stderr)
    # Hosts differing only in case are one pod.
    r = sb.run(["--dry-run", sb.script], sb.env(mpi_host="job-worker-0.job,JOB-WORKER-0.JOB"))
    expect_rc(r, 3, "case duplicates")
    check("twice" in r.stderr, r.stderr)
    # Valid Kubernetes quantities are accepted (and floored).
    for q, slots in (("+4", 4), ("1e3", 1000), ("4e-1", None), ("1k", 1000), ("2Ki", 2048)):
        r = sb.run(["--dry-run", "--json", sb.script], sb.env(master_cpu=q, worker_cpu="1"))
        if slots is None:
            expect_rc(r, 4, f"CPU {q} floors to 0 slots")
        else:
            expect_rc(r, 0, f"CPU {q}")
            check(json.loads(r.stdout)["hosts"][0]["slots"] == slots, f"{q}: {r.stdout}")
    # The dry run says what the real run will do.
    r = sb.run(["--dry-run", "--state-dir", "rel/state", sb.script], sb.env())
    expect_rc(r, 3, "relative state dir")
    check("must be an absolute path" in r.stderr, r.stderr)
    many = sb._write(os.path.join(sb.dir, "many.hosts"), "".join(f"w-{i}.job\n" for i in range(100000)), 0o644)
    r = sb.run(["--dry-run", "--hostfile-mode", "never", "--hosts-file", many, sb.script],
               sb.env(mpi_host=None, replicas="100000"), timeout=60)
    expect_rc(r, 4, "100,000 hosts on the command line")
    check("E2BIG" in r.stderr, r.stderr[-500:])
    with open("/dev/full", "w") as full:
        p = subprocess.run([GJ, "--dry-run", sb.script], env=sb.env(), stdout=full, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 1 and "writing the dry run to stdout failed" in p.stderr, f"{p.returncode} {p.stderr}")
    p = subprocess.run([GJ, "--dry-run", sb.script], env=sb.env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True, preexec_fn=lambda: os.close(1))
    check(p.returncode != 0, f"closed stdout: rc {p.returncode}")
    r = subprocess.run([GJ.encode(), b"--dry-run", b"--json", sb.script.encode(), b"caf\xe9", "\u00e9\u2028".encode()],
                       env=sb.env(), capture_output=True, timeout=20)
    expect_rc(r, 0, "non-UTF-8 argument")
    j = json.loads(r.stdout.decode("utf-8"))  # strict: invalid UTF-8 raises
    check(j["argv"][-2:] == ["caf\u00e9", "\u00e9\u2028"], j["argv"][-2:])


def test_sshd_setup_hostile(sb):
    """A worker's sshd preparation: a reused host key with mode 0644 is made 0600 (sshd refuses
    it otherwise); an authorized_keys that is a FIFO fails at once; an empty one is warned about;
    a large one (8.5 MB) is copied; a client key named with a space is refused."""
    if shutil.which("ssh-keygen") is None:
        skip("sshd_setup_hostile needs ssh-keygen")
    env = sb.env(role="worker")
    r = sb.run([sb.script], env)
    expect_rc(r, 0, "worker with stub sshd")
    key = os.path.join(sb.state, "ssh_host_ed25519_key")
    os.chmod(key, 0o644)
    r = sb.run([sb.script], env)
    expect_rc(r, 0, "worker restart with a 0644 host key")
    check(oct(os.stat(key).st_mode & 0o777) == "0o600" and "had mode 644" in r.stderr, r.stderr)
    check("authorized_keys is empty" in r.stderr, f"no warning for an empty authorized_keys: {r.stderr}")
    ak = os.path.join(sb.ssh, "authorized_keys")
    with open(ak, "w") as f:
        f.write(("ssh-ed25519 " + "A" * 80 + " k\n") * 90000)  # ~8.5 MB
    r = sb.run([sb.script], env)
    expect_rc(r, 0, "8.5 MB authorized_keys")
    os.unlink(ak)
    os.mkfifo(ak)
    t0 = time.monotonic()
    r = sb.run([sb.script], env)
    expect_rc(r, 6, "authorized_keys FIFO")
    check(time.monotonic() - t0 < 5 and "is not a regular file" in r.stderr, r.stderr)
    # A client key whose name Open MPI's plm_rsh_args would split at the space: the master
    # refuses it, naming it.
    os.unlink(ak)
    with open(ak, "w") as f:
        f.write("ssh-ed25519 " + "A" * 80 + " k\n")
    spaced = os.path.join(sb.ssh, "id_a b")
    shutil.copy(os.path.join(sb.ssh, "id_rsa") if os.path.exists(os.path.join(sb.ssh, "id_rsa")) else ak, spaced)
    r = sb.run([sb.script], sb.env())  # the master copies client keys for mpiexec's ssh
    os.unlink(spaced)
    expect_rc(r, 6, "client key name with a space")
    check("id_a b" in r.stderr and "split ssh arguments on spaces" in r.stderr, r.stderr)


def test_master_port_half_taken(sb):
    """Another process on 0.0.0.0:PORT while [::]:PORT is free: the master refuses to start its
    sshd (exit 6) instead of letting the gate reach the foreign process."""
    sshd = real_sshd("master_port_half_taken")
    import socket
    port = free_port()
    foreign = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    foreign.bind(("0.0.0.0", port))
    foreign.listen(1)
    try:
        env = sb.env(replicas="1", mpi_host="localhost")
        for k in ("GJ_NO_SSHD", "GJ_SSHD"):
            env.pop(k)
        env.update({"GJ_SSHD": sshd, "GJ_SSH_PORT": str(port), "GJ_MASTER_HOST": "127.0.0.1"})
        r = sb.run([sb.script], env, timeout=60)
        expect_rc(r, 6, "half-taken port")
        check(f"port {port} is already in use on 0.0.0.0" in r.stderr, r.stderr)
        check(sb.recorded("mpiexec") is None, "mpiexec started against the foreign process")
        check_no_sshd_left(sb)
    finally:
        foreign.close()


def test_hostile_log_values(sb):
    """Issue #27 items 1-3: a script argument with a newline or escape cannot forge a log line (the
    master's "running:" line escapes it like every value); the pod name in the log prefix follows
    the same rule (non-UTF-8 bytes escaped, over 200 bytes shortened); MASTER_ADDR from the
    environment must be a host name or an address (exit 3 naming it, in the dry run too)."""
    env = sb.env(master_cpu="1", worker_cpu="1")
    r = sb.run([sb.script, "ok\n[gj-mpirun master@job-master-0 error] forged", "\x1b[31mred"], env)
    expect_rc(r, 0, "exec with hostile arguments")
    running = [l for l in r.stderr.splitlines() if "running:" in l]
    check(len(running) == 1, f"one running line: {r.stderr}")
    check("ok\\n[gj-mpirun master@job-master-0 error] forged" in running[0] and "\\x1bred" not in running[0]
          and "\\x1b[31mred" in running[0], running[0])
    check(not any(l.startswith("[gj-mpirun master@job-master-0 error] forged") for l in r.stderr.splitlines()),
          r.stderr)
    check("\x1b" not in r.stderr, "a raw escape reached the log")
    check(sb.recorded("mpiexec")[-2:] == ["ok\n[gj-mpirun master@job-master-0 error] forged", "\x1b[31mred"],
          "the arguments themselves reach mpiexec unchanged")

    for pod, shown in ((b"job-\xff\xfe-0", "job-\\xff\\xfe-0"), (b"p" * 100000, "p" * 200 + "... (100000 bytes)")):
        env = {k.encode(): v.encode() for k, v in sb.env().items()}
        env[b"GJ_TRAINING_POD_NAME"] = pod
        env[b"GJ_MASTER_HOST"] = b"job-master-0.job"
        r = subprocess.run([GJ, "--dry-run", "--mpi", "openmpi", "--log-level", "debug", sb.script], env=env,
                           capture_output=True, timeout=20)
        err = r.stderr.decode("utf-8", "strict") if all(b < 0x80 for b in r.stderr) else None
        check(err is not None, f"non-ASCII bytes in the log: {r.stderr[:300]!r}")
        lines = [l for l in err.splitlines() if l.startswith("[gj-mpirun master@")]
        check(lines, f"no log line with the prefix: {err[:500]}")
        check(all(l.startswith(f"[gj-mpirun master@{shown} ") for l in lines), f"prefix: {lines[0][:300]}")
        check(all(len(l) < 2000 for l in lines), "a log line is longer than 2000 bytes")

    for bad in ("a,b", "m\nx"):
        env = sb.env()
        env["MASTER_ADDR"] = bad
        for dry in (["--dry-run"], []):
            r = sb.run(dry + [sb.script], env)
            expect_rc(r, 3, f"MASTER_ADDR={bad!r} {dry}")
            check("MASTER_ADDR=" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr)


def test_exec_argv(sb):
    env = sb.env(master_cpu="2", worker_cpu="2")
    env["OMP_NUM_THREADS"] = "3"
    r = sb.run(["--mpi-arg=--bind-to", "--mpi-arg=none", "-x", "EXTRA=1", "--", sb.py, "--lr", "0.1", "--"], env)
    expect_rc(r, 0, "exec")
    argv = sb.recorded("mpiexec")
    hosts = "job-master-0.job:2,job-worker-0.job:2,job-worker-1.job:2"
    check(argv is not None, f"mpiexec not run: {r.stderr}")
    check([sb.mpiexec] + argv[:7] == ompi_head(sb.mpiexec, hosts, 6), f"argv head {argv[:7]}")
    tail = without_rank_exec(argv)
    check(tail[-9:] == ["--bind-to", "none", "-x", "EXTRA=1", "python3", sb.py, "--lr", "0.1", "--"],
          f"argv tail {tail[-9:]}")
    i = argv.index("OMP_NUM_THREADS")
    check(argv[i - 1] == "-x", "default export OMP_NUM_THREADS forwarded with -x")
    plm = argv[argv.index("plm_rsh_args") + 1]
    key = os.path.join(sb.state, "ssh", "id_rsa")
    for opt in ("BatchMode=yes", "StrictHostKeyChecking=no", "-p 22", "-i " + key):
        check(opt in plm, f"{opt} not in plm_rsh_args {plm!r}")
    check("MPI_HOSTS=" + hosts in r.stderr, "log names MPI_HOSTS")
    check(oct(os.stat(key).st_mode & 0o777) == "0o600", "client key copied with mode 0600")


def test_exec_hydra_env(sb):
    env = sb.env()
    env["GJ_SSH_PORT"] = "2222"
    r = sb.run(["--mpi", "mpich", sb.script], env)
    expect_rc(r, 0, "mpich exec")
    with open(os.path.join(sb.bin, "mpiexec.env")) as f:
        menv = f.read()
    check("HYDRA_LAUNCHER_EXTRA_ARGS=" in menv and "-p 2222" in menv, "HYDRA_LAUNCHER_EXTRA_ARGS set for mpiexec")
    check(sb.recorded("mpiexec")[:2] == ["-hosts", "job-master-0.job:4,job-worker-0.job:4,job-worker-1.job:4"],
          sb.recorded("mpiexec"))


def test_exec_hostfile(sb):
    r = sb.run(["--hostfile-mode", "always", sb.script], sb.env())
    expect_rc(r, 0, "hostfile exec")
    argv = sb.recorded("mpiexec")
    path = os.path.join(sb.state, "hostfile")
    check(argv[1:3] == ["--hostfile", path], f"argv {argv[:4]}")
    with open(path) as f:
        check(f.read() == "job-master-0.job slots=4\njob-worker-0.job slots=4\njob-worker-1.job slots=4\n",
              "hostfile content")


def test_exit_codes(sb):
    for mode in ("exec", "supervise"):
        flag = "--no-supervise" if mode == "exec" else "--supervise"
        for stub, want in (("exit:0", 0), ("exit:1", 1), ("exit:42", 42),
                           ("signal:KILL", 128 + 9), ("signal:TERM", 128 + 15)):
            env = sb.env(mpi_host="", replicas="0")
            env["STUB_MODE"] = stub
            r = sb.run([flag, sb.script], env)
            if mode == "exec" and stub.startswith("signal:"):
                # gj-mpirun became mpiexec: the pod sees the signal itself (Kubernetes reports 128+N).
                want_rc = -(want - 128)
            else:
                want_rc = want
            expect_rc(r, want_rc, f"{mode} {stub}")
            check(sb.recorded("mpiexec") is not None, f"{mode} {stub}: stub not run")


def test_worker_exec_sshd(sb):
    env = sb.env(role="worker")
    env["STUB_SSHD_EXIT"] = "0"
    r = sb.run([sb.script], env)
    expect_rc(r, 0, "worker")
    argv = sb.recorded("sshd")
    check(argv is not None and argv[:2] == ["-D", "-e"], f"sshd argv {argv}")
    check(sb.recorded("mpiexec") is None, "worker ran mpiexec")


FAKE_RANK = r"""
import os, signal, sys, time
def stop(sig, frame):
    open(sys.argv[1], "w").write("stop")
    time.sleep(0.5)  # "saving a checkpoint"
    sys.exit(0)
signal.signal(signal.SIGRTMIN + 1, stop)
print("ready", flush=True)
time.sleep(60)
"""


def test_worker_stop(sb):
    """SIGTERM to a worker pod's gj-mpirun (the pod deleted): it first asks this pod's rank
    wrappers (the pids noted in GJ_STATE_DIR/ranks) to stop with SIGRTMIN+1, and passes the
    signal to sshd once they have left (well before GJ_STOP_GRACE): 143. docs/agent.md "Stop requests"."""
    env = sb.env(role="worker")
    state = os.path.join(sb.dir, "state-stop")
    env.update(STUB_SSHD_SLEEP="1002", GJ_STATE_DIR=state, GJ_STOP_GRACE="30")
    marker = os.path.join(sb.dir, "rank-stopped")
    rank = subprocess.Popen([sys.executable, "-c", FAKE_RANK, marker], stdout=subprocess.PIPE, text=True)
    try:
        check(rank.stdout.readline().strip() == "ready", "the fake rank started")
        p = subprocess.Popen([GJ, sb.script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 15
        while (sb.recorded("sshd") or [""])[0] != "-D" and time.time() < deadline:  # not its `sshd -t` check
            time.sleep(0.05)
        check((sb.recorded("sshd") or [""])[0] == "-D", "the worker started sshd")
        # The wrapper's note, as a rank started over ssh would leave it (the state dir exists now).
        os.makedirs(os.path.join(state, "ranks"), exist_ok=True)
        open(os.path.join(state, "ranks", str(rank.pid)), "w").close()
        time.sleep(0.3)
        sent = time.time()
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=20)
        took = time.time() - sent
        try:
            rank.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        check(os.path.exists(marker), f"the rank wrapper got the stop request:\n{err}")
        check("asked this pod's 1 rank(s) to stop the job" in err, f"the worker's log says so:\n{err}")
        check(took < 5, f"sshd got the signal once the rank had left, not after the 30 s grace ({took:.1f} s)")
        expect_rc(subprocess.CompletedProcess([], p.returncode, "", err), 143, "worker stop")
    finally:
        if rank.poll() is None:
            rank.kill()


def test_missing_programs(sb):
    """mpiexec / sshd / ssh-keygen that cannot run: 127 (or 126), one line naming the setting."""
    cases = [
        ("mpiexec, detected", dict(GJ_MPIEXEC="/nonexistent/mpiexec"), [sb.script], 127, "/nonexistent/mpiexec"),
        ("mpiexec, --mpi given", dict(GJ_MPIEXEC="/nonexistent/mpiexec"), ["--mpi", "openmpi", sb.script], 127,
         "/nonexistent/mpiexec"),
        ("mpiexec not executable", dict(GJ_MPIEXEC=sb.py), ["--mpi", "openmpi", sb.script], 126, sb.py),
        ("worker sshd", dict(GJ_TRAINING_ROLE="worker", GJ_SSHD="/nonexistent/sshd"), [], 127, "GJ_SSHD"),
    ]
    for name, over, args, code, text in cases:
        env = sb.env(mpi_host="", replicas="0")
        env.update(over)
        r = sb.run(args, env)
        expect_rc(r, code, name)
        errors = [l for l in r.stderr.splitlines() if " error]" in l]
        check(len(errors) == 1 and text in errors[0], f"{name}: {r.stderr!r}")


def test_pid1_supervises_by_default(sb):
    """As PID 1 (a new PID namespace) gj-mpirun supervises: a job killed by SIGKILL becomes exit
    137 instead of killing the container's init."""
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        skip("pid1_supervises_by_default needs root and unshare")
    env = sb.env(mpi_host="", replicas="0")
    env["STUB_MODE"] = "signal:KILL"
    r = subprocess.run([unshare, "--pid", "--fork", GJ, sb.script], env=env, capture_output=True, text=True,
                       timeout=30)
    expect_rc(r, 137, "PID 1, default supervise")
    env["GJ_SUPERVISE"] = "0"
    r = subprocess.run([unshare, "--pid", "--fork", GJ, sb.script], env=env, capture_output=True, text=True,
                       timeout=30)
    check(r.returncode != 137, f"GJ_SUPERVISE=0 as PID 1 still supervised: {r.returncode}")


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_gate_unreachable(sb):
    """Readiness deadline: exit 5 naming the host and why; mpiexec never starts."""
    env = sb.env(replicas="1", mpi_host="localhost")
    env.pop("GJ_NO_WAIT")
    env["GJ_SSH_PORT"] = str(free_port())
    t0 = time.monotonic()
    r = sb.run(["--ready-timeout", "2", sb.script], env)
    expect_rc(r, 5, "unreachable worker")
    check(time.monotonic() - t0 < 15, "deadline respected")
    err = [l for l in r.stderr.splitlines() if " error]" in l]
    check(len(err) == 1 and "workers not reachable after 2 s" in err[0] and "localhost" in err[0]
          and "refused" in err[0], f"error line {err}")
    per_host = [l for l in r.stderr.splitlines() if "not ready: localhost: connection refused" in l]
    check(len(per_host) == 1, f"one log line per unready host naming it and why: {r.stderr}")
    check(sb.recorded("mpiexec") is None, "mpiexec started although a worker was not ready")


def test_master_real_sshd_gate(sb):
    """The whole master path on one machine: its own real sshd, the key copy, the readiness gate
    with a real ssh login to a "worker" (localhost, served by that sshd), then mpiexec (stub)."""
    sshd = real_sshd("master_real_sshd_gate")
    sb.use_real_keypair()  # group-readable, like a mounted secret: gj-mpirun must copy it
    env = sb.env(replicas="1", mpi_host="localhost")
    for k in ("GJ_NO_WAIT", "GJ_NO_SSHD", "GJ_SSHD"):
        env.pop(k)
    env.update({"GJ_SSHD": sshd, "GJ_SSH_PORT": str(free_port()), "GJ_MASTER_HOST": "127.0.0.1"})
    r = sb.run(["--supervise", "--ssh-check", "--ready-timeout", "30", sb.script], env, timeout=90)
    expect_rc(r, 0, "master with real sshd")
    argv = sb.recorded("mpiexec")
    check(argv is not None, "mpiexec not started")
    plm = argv[argv.index("plm_rsh_args") + 1]
    check("-i " + os.path.join(sb.state, "ssh", "id_ed25519") in plm, plm)
    check("ready" in r.stderr, r.stderr)
    # The supervised run must not leave the master's sshd behind (sshd also removes its pid file).
    check_no_sshd_left(sb)


def check_no_sshd_left(sb):
    config = os.path.join(sb.state, "sshd_config")
    left = []
    for _ in range(50):
        left = [p for p in os.listdir("/proc") if p.isdigit() and config in _cmdline(p)]
        if not left:
            break
        time.sleep(0.1)
    for pid in left:
        os.kill(int(pid), signal.SIGTERM)
    check(not left, f"the master's sshd outlived gj-mpirun: pids {left}")


def test_master_sshd_cleanup_on_failure(sb):
    """A failure after the master's sshd started (here: no client key to copy, exit 6) stops
    that sshd before gj-mpirun exits."""
    sshd = real_sshd("master_sshd_cleanup_on_failure")
    os.unlink(os.path.join(sb.ssh, "id_rsa"))
    env = sb.env(replicas="1", mpi_host="localhost")
    for k in ("GJ_NO_SSHD", "GJ_SSHD"):
        env.pop(k)
    env.update({"GJ_SSHD": sshd, "GJ_SSH_PORT": str(free_port()), "GJ_MASTER_HOST": "127.0.0.1"})
    r = sb.run([sb.script], env, timeout=60)
    expect_rc(r, 6, "no client key")
    check("Server listening" in r.stderr, f"sshd did not start first:\n{r.stderr}")
    check_no_sshd_left(sb)
    check(sb.recorded("mpiexec") is None, "mpiexec started")


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_help_version(sb):
    r = sb.run(["--help"], {})
    expect_rc(r, 0, "help")
    for word in ("--dry-run", "--json", "--mpi-arg", "--export", "--ready-timeout", "GJ_TRAINING_ROLE",
                 "MPI_HOST", "GJ_READY_TIMEOUT", "Exit codes"):
        check(word in r.stdout, f"--help lacks {word}")
    r = sb.run(["--version"], {})
    expect_rc(r, 0, "version")
    check(r.stdout.startswith("gj-mpirun "), r.stdout)


def test_static(sb):
    f = subprocess.run(["file", "-L", GJ], capture_output=True, text=True)
    check("statically linked" in f.stdout, f.stdout)
    l = subprocess.run(["ldd", GJ], capture_output=True, text=True)
    check("not a dynamic executable" in (l.stdout + l.stderr), l.stdout + l.stderr)
    r = sb.run(["--version"], {})  # the binary says so too (a pip install may link it dynamically)
    check(r.stdout.endswith(" (static)\n"), r.stdout)


def use_intel_mpi(env, named=False):
    """Makes env an image with Intel MPI's runtime (GJ_IMPI_ROOT, scripts/install-deps.sh --impi) first
    in PATH, so gj-mpirun detects it from `mpiexec --version` (no GJ_MPI), and programs built against
    Debian's MPICH loading Intel MPI's libmpi.so.12 through GJ_IMPI_ABI_DIR (tests/impi). named: Intel
    MPI not in PATH (Open MPI's mpiexec is), but named: GJ_MPI=intel, GJ_MPIEXEC=<root>/bin/mpiexec.hydra."""
    root = os.environ.get("GJ_IMPI_ROOT", "/opt/gj-venvs/impi")
    abi = os.environ.get("GJ_IMPI_ABI_DIR", "")
    if not os.access(os.path.join(root, "bin", "mpiexec.hydra"), os.X_OK) or not abi or \
            not os.path.exists(os.path.join(abi, "libmpich.so.12")):
        skip(f"no Intel MPI runtime at GJ_IMPI_ROOT={root} (scripts/install-deps.sh --impi) or no "
             f"libmpich.so.12 in GJ_IMPI_ABI_DIR={abi!r}")
    env.update({"I_MPI_ROOT": root, "LD_LIBRARY_PATH": abi + ":" + os.path.join(root, "lib")})
    if named:
        env.update({"GJ_MPI": "intel", "GJ_MPIEXEC": os.path.join(root, "bin", "mpiexec.hydra")})
    else:
        env["PATH"] = os.path.join(root, "bin") + ":" + env["PATH"]


def test_real_mpi_job(sb):
    """The README's example: master with no workers, real mpiexec, a real MPI program on 2 local
    slots; EXTRA[1] == "intel": under Intel MPI (the program built against MPICH), detected;
    "intel-named": named by GJ_MPI=intel and GJ_MPIEXEC."""
    program = EXTRA[0]
    intel = EXTRA[1:] in (["intel"], ["intel-named"])
    env = sb.env(master_cpu="2", replicas="0", mpi_host="")
    for k in ("GJ_MPIEXEC", "GJ_SSHD"):
        env.pop(k)
    env.update({"GJ_MASTER_HOST": "localhost", "GJ_NO_SSHD": "1", "OMPI_MCA_btl": "self,vader,tcp",
                "OMPI_MCA_plm_rsh_agent": "false"})
    if intel:
        use_intel_mpi(env, named=EXTRA[1] == "intel-named")
        env["I_MPI_DEBUG"] = "4"  # rank 0 names its library and fabric
    r = sb.run([program], env, timeout=120)
    expect_rc(r, 0, "real mpi job")
    for rank in (0, 1):
        check(f"rank {rank} of 2" in r.stdout, f"rank {rank} missing: {r.stdout}\n{r.stderr}")
    check("allreduce ok" in r.stdout, r.stdout)
    if intel:
        check(re.search(r"MPI_NP=2 \(.*, intel\)", r.stderr), f"flavour not detected as intel: {r.stderr}")
        check("Intel(R) MPI Library, Version" in r.stdout + r.stderr, f"not Intel MPI's library: {r.stdout}{r.stderr}")
        # Intel MPI pins by default; gj-mpirun turns that off exactly when its binding is off.
        off = "] cpu binding: off" in r.stderr
        check(("I_MPI_PIN=off" in r.stdout + r.stderr) == off,
              f"binding {'off' if off else 'not off'} but I_MPI_PIN=off {'missing' if off else 'set'}: {r.stdout}{r.stderr}")


def test_torch_distributed(sb):
    """An unchanged torch.distributed (gloo) script, master-only on 2 local slots (a GPU-shaped
    pod: 2 GPUs, 6 CPUs), under the MPI flavour named by EXTRA[1] (openmpi, mpich or intel): every rank
    gets torchrun's variables and torch runs 6 / 2 = 3 threads (fewer under a smaller cgroup quota)."""
    script, flavour = EXTRA[0], EXTRA[1]
    env = sb.env(master_cpu="6", master_gpu="2", replicas="0", mpi_host="")
    quota = cgroup_quota_cpus()
    threads = max(min(6, int(quota) if quota else 6) // 2, 1)
    for k in ("GJ_MPIEXEC", "GJ_SSHD"):
        env.pop(k)
    env.update({"GJ_MASTER_HOST": "localhost", "GJ_NO_SSHD": "1", "GJ_PYTHON": "/usr/bin/python3",
                "OMPI_MCA_btl": "self,vader,tcp", "OMPI_MCA_plm_rsh_agent": "false"})
    if flavour == "mpich":
        env.update({"GJ_MPI": "mpich", "GJ_MPIEXEC": "mpiexec.mpich"})
    elif flavour == "intel":
        use_intel_mpi(env)
    r = sb.run([script], env, timeout=150)
    expect_rc(r, 0, f"torch.distributed job ({flavour}): {r.stdout}\n{r.stderr}")
    for rank in (0, 1):
        check(re.search(rf"^TORCHDIST ok rank={rank}/2 .* local={rank}/2 group=0 master=localhost:\d+ threads={threads}$",
                        r.stdout, re.M),
              f"rank {rank}: {r.stdout}\n{r.stderr}")


def test_real_mpi_over_ssh(sb):
    """Real Open MPI reaching a second "host" (127.0.0.2, not a local interface address, so Open
    MPI launches its daemon there over ssh) through the master's own sshd: the ssh options,
    copied key and port of the plan work, and a rank started over ssh sees the pod environment
    through sshd's SetEnv (GJ_E2E_MARKER is not forwarded by mpiexec). EXTRA[1] == "intel": the
    same under Intel MPI (the program built against MPICH)."""
    program = EXTRA[0]
    real_sshd("real_mpi_over_ssh")
    sb.use_real_keypair()
    env = sb.env(master_cpu="1", worker_cpu="1", replicas="1", mpi_host="127.0.0.2")
    for k in ("GJ_NO_WAIT", "GJ_NO_SSHD", "GJ_SSHD", "GJ_MPIEXEC"):
        env.pop(k)
    env.update({"GJ_SSH_PORT": str(free_port()), "GJ_MASTER_HOST": "127.0.0.1", "GJ_E2E_MARKER": "seen-over-ssh",
                "OMPI_MCA_btl": "self,vader,tcp"})
    if EXTRA[1:] == ["intel"]:
        use_intel_mpi(env)  # Intel's hydra: -bootstrap ssh with the plan's ssh options
    r = sb.run(["--supervise", "--ready-timeout", "60", program, "GJ_E2E_MARKER"], env, timeout=150)
    expect_rc(r, 0, "real mpi over ssh")
    for rank in (0, 1):
        check(f"rank {rank} of 2" in r.stdout, f"rank {rank} missing:\n{r.stdout}\n{r.stderr}")
        check(f"rank {rank}: GJ_E2E_MARKER=seen-over-ssh" in r.stdout, f"rank {rank} lacks the pod env:\n{r.stdout}")
    check("Accepted publickey for root" in r.stderr, f"mpiexec did not go through our sshd:\n{r.stderr}")


def test_preflight_facts(sb):
    """The static binary's GPU probe (`--preflight-facts`, run on every pod over ssh): NVML opened
    at run time in a child (EXTRA[0]: the fake NVML, tests/agent/fake_nvml.c), a lost device and
    ECC errors noted; the driver's proc tree under GJ_GPU_ROOT where NVML is missing; nothing
    where neither is. And the dry run says what would be checked."""
    lib = EXTRA[0]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GJ_NVML_LIBRARY": lib, "FAKE_NVML_COUNT": "8",
           "FAKE_NVML_LOST": "3", "FAKE_NVML_ECC": "5:2", "CUDA_VISIBLE_DEVICES": "0,1",
           "SSH_CONNECTION": "10.0.0.1 40000 10.0.0.2 22", "GJ_GPU_ROOT": sb.dir}
    r = sb.run(["--preflight-facts"], env)
    expect_rc(r, 0, "preflight facts from the fake NVML")
    out = r.stdout
    check(out.startswith("gj-facts 1\n") and out.rstrip().endswith("gj-facts-end"), f"not the facts protocol: {out!r}")
    check("gj-facts-source nvml" in out, f"NVML not used: {out}")
    gpus = [l for l in out.splitlines() if l.startswith("gj-facts-gpu ")]
    check(len(gpus) == 7, f"8 devices, one lost: 7 lines expected: {gpus}")
    check("gj-facts-gpu GPU-fa4e0000-0000-0000-0000-000000000005 00000000:1D:00.0 2 NVIDIA H100 80GB HBM3" in out,
          f"device 5 with its ECC errors missing: {out}")
    check("NVML device 3 cannot be opened (error 15: GPU is lost)" in out, f"the lost device not noted: {out}")
    check("gj-facts-cuda-visible 0,1" in out and "gj-facts-address 10.0.0.2" in out
          and "gj-facts-ssh-client 10.0.0.1" in out, out)
    # No NVML: the proc tree under GJ_GPU_ROOT.
    info = os.path.join(sb.dir, "proc/driver/nvidia/gpus/0000:07:00.0")
    os.makedirs(info)
    sb._write(os.path.join(info, "information"), "Model: \t\t NVIDIA A100\nGPU UUID: \t GPU-77\nBus Location: \t 0000:07:00.0\n", 0o644)
    os.makedirs(os.path.join(sb.dir, "sys/class/infiniband/mlx5_0"))
    env["GJ_NVML_LIBRARY"] = os.path.join(sb.dir, "no-such-libnvidia-ml.so.1")
    r = sb.run(["--preflight-facts"], env)
    expect_rc(r, 0, "preflight facts from the proc tree")
    check("gj-facts-source proc" in r.stdout and "gj-facts-gpu GPU-77 0000:07:00.0 -1 NVIDIA A100" in r.stdout, r.stdout)
    check("gj-facts-rdma mlx5_0" in r.stdout, r.stdout)
    env["GJ_GPU_ROOT"] = os.path.join(sb.dir, "bin")
    r = sb.run(["--preflight-facts"], env)
    check("gj-facts-source none" in r.stdout and "gj-facts-gpu" not in r.stdout, r.stdout)
    # The dry run: what would be checked, per layout.
    gpu_job = sb.env(master_gpu="8", worker_gpu="8")
    gpu_job.pop("GJ_NO_WAIT")  # the checks need the readiness gate
    r = sb.run(["--dry-run", sb.py], gpu_job)
    expect_rc(r, 0, "dry run of a GPU job")
    check(re.search(r"^# preflight: GPUs: .*>= 8.*exit 8", r.stdout, re.M), f"no GPU line: {r.stdout}")
    check(re.search(r"^# preflight: network: 3 pods", r.stdout, re.M), f"no network line: {r.stdout}")
    check(re.search(r"^# preflight: NCCL: ", r.stdout, re.M), f"no NCCL line: {r.stdout}")
    check("nccl=" in r.stdout, f"the ranks' spec lacks the NCCL folder: {r.stdout}")
    off = dict(gpu_job, GJ_PREFLIGHT="off")
    r = sb.run(["--dry-run", sb.py], off)
    check("# preflight: off" in r.stdout and "nccl=" not in r.stdout, r.stdout)
    r = sb.run(["--dry-run", sb.py], sb.env(master_gpu="8", worker_gpu="8"))
    check("# preflight: GPU and network checks skipped with the readiness gate (--no-wait)" in r.stdout, r.stdout)


def main():
    global GJ, EXTRA
    GJ = os.path.abspath(sys.argv[1])
    name = sys.argv[2]
    EXTRA = sys.argv[3:]
    tests = {k[5:]: v for k, v in globals().items() if k.startswith("test_")}
    names = sorted(tests) if name == "all" else [name]
    failed = skipped = 0
    for n in names:
        if n in ("real_mpi_job", "real_mpi_over_ssh", "preflight_facts") and not EXTRA:
            continue
        sb = Sandbox()
        try:
            tests[n](sb)
            print(f"PASS {n}")
        except Skip as e:
            skipped += 1
            print(f"SKIP {n}: {e}")
        except Fail as e:
            failed += 1
            print(f"FAIL {n}: {e}")
        finally:
            sb.close()
    if failed:
        return 1
    # A run that skipped any of its tests is reported as a skip, never as a pass.
    return SKIP_RETURN_CODE if skipped else 0


if __name__ == "__main__":
    sys.exit(main())
