#!/usr/bin/env python3
"""Security tests of the real gj-mpirun binary (SECURITY.md, "What gj-mpirun guarantees").

Run by ctest, one test class per ctest (label `security`):
    security_test.py --gj-mpirun PATH [--sshd PATH] ClassName

Every run gets a scratch directory below a root-only parent (gj-mpirun refuses a state dir
below a group/world-writable directory such as /tmp, as it should), recording stubs for
mpiexec/sshd/ssh/ssh-keygen first in PATH, and an environment built from scratch (only the
sanitizer settings of a hardening build are passed through).
"""
import argparse
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

GJ_MPIRUN = None
SSHD = "/usr/sbin/sshd"
EXIT_BAD_ENVIRONMENT = 3
EXIT_SETUP_FAILED = 6
TIMEOUT_S = 60

RECORDING_STUB = """#!/bin/sh
# Records that it ran and with which arguments, one per line, then succeeds.
{{ printf 'CALL %s\\n' "$0"; for a in "$@"; do printf 'ARG %s\\n' "$a"; done; }} >> "{record}"
exit 0
"""

HOSTILE_HOSTS = [
    "-oProxyCommand=x",
    "job-worker-0.job,-oProxyCommand=touch /tmp/gj-pwned",
    "a;b",
    "$(x)",
    "`x`",
    "a b",
    "a\nb",
    "a\rb",
    "a|b",
    "a&b",
    "a>b",
    "job-worker-0.job:4",
    "--host",
    "a\tb",
    "a'b",
    'a"b',
]


def scratch_parent():
    """A directory no one but root can write, all the way up: /run when we may write there."""
    for base in ("/run", os.environ.get("GJ_SECURITY_SCRATCH", "")):
        if base and os.path.isdir(base) and os.access(base, os.W_OK):
            return base
    raise unittest.SkipTest("no root-only scratch directory (run as root, or set GJ_SECURITY_SCRATCH)")


class Sandbox:
    """Scratch dir, stubs, mounted-looking ssh keys and a valid platform environment."""

    def __init__(self):
        self.root = tempfile.mkdtemp(prefix="gj-security-", dir=scratch_parent())
        os.chmod(self.root, 0o700)
        self.record = os.path.join(self.root, "calls.log")
        self.stubs = os.path.join(self.root, "stubs")
        os.mkdir(self.stubs, 0o700)
        for name in ("mpiexec", "mpirun", "sshd", "ssh"):
            path = os.path.join(self.stubs, name)
            with open(path, "w") as f:
                f.write(RECORDING_STUB.format(record=self.record))
            os.chmod(path, 0o755)
        self.state = os.path.join(self.root, "state")
        self.ssh_dir = os.path.join(self.root, "ssh-secret")
        os.mkdir(self.ssh_dir, 0o755)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test", "-f",
                        os.path.join(self.ssh_dir, "id_rsa")], check=True, timeout=TIMEOUT_S)
        shutil.copy(os.path.join(self.ssh_dir, "id_rsa.pub"), os.path.join(self.ssh_dir, "authorized_keys"))
        for f in os.listdir(self.ssh_dir):  # Kubernetes secret volumes: group/world-readable
            os.chmod(os.path.join(self.ssh_dir, f), 0o644)
        self.script = os.path.join(self.root, "train.sh")
        with open(self.script, "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(self.script, 0o755)

    def close(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def env(self, role="master", **extra):
        env = {k: v for k, v in os.environ.items() if k.split("_")[0] in ("ASAN", "UBSAN", "LSAN", "MSAN")}
        env.update({
            "PATH": self.stubs + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "GJ_TRAINING_ROLE": role,
            "GJ_TRAINING_VC_JOB_NAME": "job",
            "GJ_TRAINING_POD_NAME": "job-%s-0" % role,
            "GJ_TRAINING_MASTER_CPU_LIMIT": "2",
            "GJ_TRAINING_MASTER_GPU_LIMIT": "0",
            "GJ_TRAINING_MASTER_REPLICAS": "1",
            "GJ_TRAINING_WORKER_CPU_LIMIT": "2",
            "GJ_TRAINING_WORKER_GPU_LIMIT": "0",
            "GJ_TRAINING_WORKER_REPLICAS": "1",
            "MPI_HOST": "job-worker-0.job",
            "GJ_MPI": "openmpi",
            "GJ_MPIEXEC": os.path.join(self.stubs, "mpiexec"),
            "GJ_SSHD": os.path.join(self.stubs, "sshd"),
            "GJ_STATE_DIR": self.state,
            "GJ_SSH_DIR": self.ssh_dir,
            "GJ_NO_WAIT": "1",
            "GJ_NO_SSHD": "1",
            "GJ_SUPERVISE": "0",
        })
        env.update(extra)
        return {k: v for k, v in env.items() if v is not None}

    def run(self, args, env):
        p = subprocess.run([GJ_MPIRUN] + args, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIMEOUT_S, cwd=self.root)
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")

    def calls(self):
        if not os.path.exists(self.record):
            return []
        with open(self.record) as f:
            return [l[len("CALL "):] for l in f.read().splitlines() if l.startswith("CALL ")]

    def recorded_args(self):
        with open(self.record) as f:
            return [l[len("ARG "):] for l in f.read().splitlines() if l.startswith("ARG ")]


class SandboxTest(unittest.TestCase):
    def setUp(self):
        self.box = Sandbox()
        self.addCleanup(self.box.close)


class HostileHosts(SandboxTest):
    """Hostnames with option or shell syntax are rejected before anything runs."""

    def test_valid_hosts_do_run_the_stub(self):
        # Control: proves the stubs would record a call, so the negative tests can fail.
        code, out, err = self.box.run([self.box.script, "-oProxyCommand=x", "$(id)"], self.box.env())
        self.assertEqual(code, 0, err)
        self.assertEqual([os.path.basename(c) for c in self.box.calls()], ["mpiexec"])
        args = self.box.recorded_args()
        self.assertIn("job-master-0.job:2,job-worker-0.job:2", args)
        # Script arguments stay after the script, never among mpiexec's options.
        i = args.index(self.box.script)
        self.assertEqual(args[i + 1:], ["-oProxyCommand=x", "$(id)"])

    def assert_rejected(self, env, what):
        for dry in ([], ["--dry-run"], ["--dry-run", "--json"]):
            with self.subTest(value=what, args=dry):
                code, out, err = self.box.run(dry + [self.box.script], env)
                self.assertEqual(code, EXIT_BAD_ENVIRONMENT, "stdout=%r stderr=%r" % (out, err))
                self.assertEqual(self.box.calls(), [], "something ran for %r" % what)
                self.assertFalse(os.path.exists("/tmp/gj-pwned"))

    def test_mpi_host(self):
        for bad in HOSTILE_HOSTS:
            self.assert_rejected(self.box.env(MPI_HOST=bad), "MPI_HOST=%r" % bad)

    def test_hosts_file(self):
        path = os.path.join(self.box.root, "worker.host")
        for bad in HOSTILE_HOSTS:
            if "\n" in bad or "," in bad:
                continue  # one host per line; a comma is just another invalid character
            with open(path, "w") as f:
                f.write(bad + "\n")
            self.assert_rejected(self.box.env(MPI_HOST=None, GJ_HOSTS_FILE=path), "hosts file line %r" % bad)

    def test_master_host_from_pod_or_job_name(self):
        for bad in ("-oProxyCommand=x", "a;b", "$(x)", "a b", "a\nb"):
            self.assert_rejected(self.box.env(GJ_TRAINING_POD_NAME=bad), "GJ_TRAINING_POD_NAME=%r" % bad)
            self.assert_rejected(self.box.env(GJ_TRAINING_VC_JOB_NAME=bad), "GJ_TRAINING_VC_JOB_NAME=%r" % bad)
            self.assert_rejected(self.box.env(GJ_MASTER_HOST=bad), "GJ_MASTER_HOST=%r" % bad)


class ErrorsAreOneLine(SandboxTest):
    """A value quoted in an error cannot forge extra log lines (finding F2, docs/hardening.md)."""

    def test_error_is_one_line(self):
        # A newline in a value must not let it forge extra log lines (pod log, termination-log).
        code, out, err = self.box.run([self.box.script], self.box.env(MPI_HOST="a\nFORGED LOG LINE"))
        self.assertEqual(code, EXIT_BAD_ENVIRONMENT)
        forged = [l for l in err.splitlines() if l.startswith("FORGED")]
        self.assertEqual(forged, [], "stderr=%r" % err)


SECRETS = {
    "MY_API_TOKEN": "supersecret-A1",
    "DB_PASSWORD": "supersecret-B2",
    "AWS_SECRET_ACCESS_KEY": "supersecret-C3",
    "GH_CREDENTIALS": "supersecret-D4",
    "HOROVOD_SECRET_KEY": "supersecret-E5",  # matches the default export HOROVOD_*
    "ssh_private_key": "supersecret-F6",
}


class SecretsTest(SandboxTest):
    """A sandbox whose environment holds SECRETS, and the check that no output shows them."""

    def env(self, role="master", **extra):
        env = self.box.env(role, **SECRETS)
        env.update(extra)
        return env

    def assert_clean(self, code, out, err, expect_code, what):
        self.assertEqual(code, expect_code, "%s: stdout=%r stderr=%r" % (what, out, err))
        for name, value in SECRETS.items():
            self.assertNotIn(value, out, "%s: stdout shows %s" % (what, name))
            self.assertNotIn(value, err, "%s: stderr shows %s" % (what, name))
        for value in ("supersecret-G7", "supersecret-H8"):
            self.assertNotIn(value, out + err, what)


class NoSecretInOutput(SecretsTest):
    """No value of a secret-looking variable appears in any output, at any log level."""

    def test_master(self):
        exports = ["--export", "MY_API_TOKEN", "--export", "INLINE_TOKEN=supersecret-G7", "--export", "DB_*"]
        for args in (["--dry-run"], ["--dry-run", "--json"], ["--dry-run", "--log-level", "trace"],
                     ["--log-level", "trace"], ["--log-level", "debug"]):
            with self.subTest(args=args):
                code, out, err = self.box.run(args + exports + [self.box.script], self.env())
                self.assert_clean(code, out, err, 0, "master %s" % args)
                if "--json" in args:
                    json.loads(out)  # still valid JSON after redaction
        # The real run did pass the values on: redaction is about output, not about the job.
        self.assertIn("INLINE_TOKEN=supersecret-G7", self.box.recorded_args())

    def test_worker(self):
        for args in (["--dry-run"], ["--dry-run", "--json"], ["--dry-run", "--log-level", "trace"],
                     ["--log-level", "trace"]):
            with self.subTest(args=args):
                code, out, err = self.box.run(args, self.env("worker"))
                self.assert_clean(code, out, err, 0, "worker %s" % args)


class NoSecretInErrors(SecretsTest):
    """Rejected input holding a secret is reported without it (finding F3, docs/hardening.md)."""

    def test_rejected_values(self):
        # A malformed request holding a secret: the error names it without the value.
        code, out, err = self.box.run(["--export", "bad-name_TOKEN=supersecret-H8", "--dry-run", self.box.script],
                                      self.env())
        self.assert_clean(code, out, err, EXIT_BAD_ENVIRONMENT, "--export with an invalid name")
        code, out, err = self.box.run(["--log-level", "trace", self.box.script],
                                      self.env(MPI_HOST="bad host", MY_API_TOKEN="supersecret-A1"))
        self.assert_clean(code, out, err, EXIT_BAD_ENVIRONMENT, "invalid MPI_HOST")


def walk_modes(top):
    """(path, lstat) for top and everything below it."""
    out = [(top, os.lstat(top))]
    for dirpath, dirnames, filenames in os.walk(top):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            out.append((p, os.lstat(p)))
    return out


class FileModes(SandboxTest):
    """Everything gj-mpirun writes is root's, 0700 dirs and 0600 files, in a 0700 state dir."""

    def assert_private_tree(self, top):
        entries = walk_modes(top)
        self.assertGreater(len(entries), 1, "nothing was written to %s" % top)
        for path, st in entries:
            mode = stat.S_IMODE(st.st_mode)
            with self.subTest(path=path, mode=oct(mode)):
                self.assertEqual(st.st_uid, os.geteuid())
                self.assertFalse(stat.S_ISLNK(st.st_mode), "symlink in the state dir")
                if stat.S_ISDIR(st.st_mode):
                    self.assertEqual(mode, 0o700)
                elif path.endswith(".pub"):
                    # Public halves may be readable; they sit in a 0700 directory anyway.
                    self.assertEqual(mode & 0o133, 0)
                else:
                    self.assertEqual(mode, 0o600)

    def test_worker_preparation(self):
        code, out, err = self.box.run([], self.box.env("worker", MY_API_TOKEN="supersecret-A1"))
        self.assertEqual(code, 0, err)
        self.assertEqual({os.path.basename(c) for c in self.box.calls()}, {"sshd"})
        self.assert_private_tree(self.box.state)
        names = os.listdir(self.box.state)
        self.assertIn("sshd_config", names)
        self.assertIn("authorized_keys", names)

    def test_master_preparation(self):
        # Hostfile always, so the hostfile is written too; keys are copied for ssh to workers.
        code, out, err = self.box.run([self.box.script], self.box.env(GJ_HOSTFILE_MODE="always"))
        self.assertEqual(code, 0, err)
        self.assert_private_tree(self.box.state)
        written = [p for p, st in walk_modes(self.box.state) if stat.S_ISREG(st.st_mode)]
        self.assertTrue(any(p.endswith("hostfile") for p in written), written)
        self.assertTrue(any("id_rsa" in os.path.basename(p) for p in written), written)

    def test_existing_loose_state_dir_is_narrowed_or_refused(self):
        os.mkdir(self.box.state, 0o750)
        os.chmod(self.box.state, 0o750)
        code, out, err = self.box.run([], self.box.env("worker"))
        mode = stat.S_IMODE(os.lstat(self.box.state).st_mode)
        self.assertTrue(code == EXIT_SETUP_FAILED or mode == 0o700, "code %d, mode %o" % (code, mode))


class StateDirRefused(SandboxTest):
    """A state dir that others could tamper with is refused before anything runs."""

    def assert_refused(self, state_dir, what):
        for role, args in (("worker", []), ("master", [self.box.script])):
            with self.subTest(what=what, role=role):
                code, out, err = self.box.run(args, self.box.env(role, GJ_STATE_DIR=state_dir))
                self.assertEqual(code, EXIT_SETUP_FAILED, "%s: stdout=%r stderr=%r" % (what, out, err))
                self.assertIn("GJ_STATE_DIR", err)
                self.assertEqual(self.box.calls(), [])

    def test_symlink(self):
        real = os.path.join(self.box.root, "real")
        os.mkdir(real, 0o700)
        link = os.path.join(self.box.root, "link")
        os.symlink(real, link)
        self.assert_refused(link, "symlinked state dir")
        self.assertEqual(os.listdir(real), [], "something was written through the symlink")

    def test_world_writable(self):
        d = os.path.join(self.box.root, "ww")
        os.mkdir(d)
        os.chmod(d, 0o777)
        self.assert_refused(d, "world-writable state dir")
        self.assertEqual(os.listdir(d), [])

    def test_other_owner(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to chown")
        d = os.path.join(self.box.root, "nobody")
        os.mkdir(d, 0o700)
        os.chown(d, 65534, 65534)
        self.assert_refused(d, "state dir owned by nobody")

    def test_below_world_writable_parent(self):
        d = os.path.join(self.box.root, "shared")
        os.mkdir(d)
        os.chmod(d, 0o1777)  # like /tmp
        self.assert_refused(os.path.join(d, "state"), "state dir below a world-writable dir")
        # The parents are checked before anything is created: a refused path leaves no trace,
        # not even the empty state dir (finding N1).
        self.assertEqual(os.listdir(d), [])


class SshdEffectiveConfig(SandboxTest):
    """What the real sshd makes of the config a worker writes (`sshd -T`)."""

    def setUp(self):
        if not os.access(SSHD, os.X_OK):
            self.skipTest("no sshd at %s" % SSHD)
        super().setUp()
        # The worker's config checks (`sshd -t ...`: validation, the PerSourcePenalties feature
        # test) go to the real sshd that reads the file below; the daemon itself stays a stub.
        stub = os.path.join(self.box.stubs, "sshd")
        with open(stub, "w") as f:
            f.write('#!/bin/sh\nif [ "$1" = -t ]; then exec %s "$@"; fi\nexit 0\n' % SSHD)

    def effective(self, session_env):
        env = self.box.env("worker", **session_env)
        code, out, err = self.box.run([], env)
        self.assertEqual(code, 0, err)
        cfg = os.path.join(self.box.state, "sshd_config")
        p = subprocess.run([SSHD, "-T", "-f", cfg], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=TIMEOUT_S)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        settings = {}
        for line in p.stdout.decode().splitlines():
            key, _, value = line.partition(" ")
            settings.setdefault(key, []).append(value)
        return settings

    def test_key_only_authentication(self):
        s = self.effective({})
        self.assertEqual(s["passwordauthentication"], ["no"])
        self.assertEqual(s["kbdinteractiveauthentication"], ["no"])
        self.assertEqual(s["permitemptypasswords"], ["no"])
        self.assertEqual(s["hostbasedauthentication"], ["no"])
        self.assertEqual(s["permitrootlogin"], ["without-password"])
        self.assertEqual(s["pubkeyauthentication"], ["yes"])
        self.assertEqual(s["permituserenvironment"], ["no"])
        self.assertEqual(s["port"], ["22"])
        for key in s["hostkey"]:
            self.assertTrue(key.startswith(self.box.state + "/"), key)

    def test_session_env_reaches_sessions_exactly(self):
        hostile = {
            "NCCL_IB_HCA": "mlx5_0,mlx5_1",
            "PLAIN": "value",
            "QUOTES": 'a"b\'c',
            "BACKSLASH": "a\\b\\",
            "HASH": "#not a comment",
            "SPACES": "  padded  ",
            "DIRECTIVE": "x PasswordAuthentication yes",
            "PERCENT": "%h%u",
        }
        s = self.effective(hostile)
        self.assertEqual(s["passwordauthentication"], ["no"])
        applied = {}
        for word in s.get("setenv", []):
            name, _, value = word.partition("=")
            applied[name] = value
        for name, value in hostile.items():
            with self.subTest(name=name):
                self.assertEqual(applied.get(name), value, "sshd -T setenv: %r" % s.get("setenv"))


def main():
    global GJ_MPIRUN, SSHD
    parser = argparse.ArgumentParser()
    parser.add_argument("--gj-mpirun", required=True)
    parser.add_argument("--sshd", default=SSHD)
    args, rest = parser.parse_known_args()
    GJ_MPIRUN = os.path.abspath(args.gj_mpirun)
    SSHD = args.sshd
    unittest.main(argv=[sys.argv[0], "-v"] + rest)


if __name__ == "__main__":
    main()
