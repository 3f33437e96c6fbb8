"""What `pip install` checks before CMake runs: a C and a C++ compiler, and an MPI whose C++ wrapper
builds and links an MPI program. Each missing piece becomes one problem naming what was looked for
and what to install; the backend (gj_build_backend.py) prints them as one message instead of a
CMake log, and hands the MPI wrapper it checked to CMake (MPI_CXX_COMPILER), so the MPI checked is
the MPI built against.

check() is pure planning over two injected effects (tests pass fakes): `which(name, path)` like
shutil.which, and `try_mpi(wrapper)` -> None when the wrapper built the test program, else its
output. system_which and system_try_mpi are the real ones (check_system()).
"""

import os
import shutil
import subprocess
import sys
import tempfile

# Where the MPI comes from, in this order (docs/packaging.md, "pip"):
MPI_CXX_DEFINE = "cmake.define.MPI_CXX_COMPILER"  # pip -C cmake.define.MPI_CXX_COMPILER=<wrapper>
MPI_CXX_ENV = "GJ_MPI_CXX"                        # GJ_MPI_CXX=<wrapper, a path or a name on PATH>
MPI_HOME_ENV = "MPI_HOME"                         # <MPI_HOME>/bin/<a wrapper below> (as CMake's FindMPI)
# C++ wrapper names: Open MPI and MPICH (mpicxx, mpic++, mpiCC), Intel MPI (mpiicpx, mpiicpc).
MPI_CXX_NAMES = ("mpicxx", "mpic++", "mpiCC", "mpiicpx", "mpiicpc")
# Compilers as CMake looks for them: $CC/$CXX, else these names on PATH.
C_NAMES = ("cc", "gcc", "clang")
CXX_NAMES = ("c++", "g++", "clang++")

MPI_PROGRAM = """#include <mpi.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Finalize();
  return 0;
}
"""

# What to install: what it is, then one line per kind of machine.
INSTALL_COMPILER = ("a C and C++ compiler", (
    "Debian/Ubuntu: apt-get install g++",
    "RHEL/Fedora:   dnf install gcc-c++",
    "conda:         conda install -c conda-forge cxx-compiler"))
INSTALL_MPI = ("an MPI with its development files (its C++ wrapper and mpi.h)", (
    "Debian/Ubuntu: apt-get install libopenmpi-dev openmpi-bin   (or: libmpich-dev mpich)",
    "RHEL/Fedora:   dnf install openmpi-devel; module load mpi",
    "conda:         conda install -c conda-forge openmpi-mpicxx   (or: mpich-mpicxx)",
    f"or set {MPI_CXX_ENV} to your MPI's C++ wrapper (Intel MPI: mpiicpx)"))


class Problem:
    """One thing missing: what was looked for and seen (`what`), and what to install (`fix`)."""

    def __init__(self, what, fix):
        self.what = what
        self.fix = fix

    def __repr__(self):
        return f"Problem({self.what!r}, {self.fix!r})"


def _setting(config_settings, key):
    """A -C setting's value (pip passes a repeated one as a list: the last wins)."""
    value = (config_settings or {}).get(key)
    if isinstance(value, list):
        value = value[-1] if value else None
    return value or None


def find_compiler(env, which, var, names):
    """(path, None) of the compiler CMake would take ($var's first word, else the first of names on
    PATH), or (None, what was looked for)."""
    path = env.get("PATH", "")
    if env.get(var):
        given = env[var].split()[0]
        found = which(given, path)
        return (found, None) if found else (None, f"{var}={env[var]!r} is not an executable program")
    for name in names:
        found = which(name, path)
        if found:
            return found, None
    return None, f"${var} is unset and none of {', '.join(names)} is on PATH"


def find_mpi_wrapper(config_settings, env, which):
    """(path, None) of the MPI C++ wrapper to build against, or (None, what was looked for)."""
    path = env.get("PATH", "")
    given = _setting(config_settings, MPI_CXX_DEFINE)
    origin = f"-C {MPI_CXX_DEFINE}"
    if not given and env.get(MPI_CXX_ENV):
        given, origin = env[MPI_CXX_ENV], MPI_CXX_ENV
    if given:
        found = which(given, path)
        return (found, None) if found else (None, f"{origin}={given!r} is not an executable program")
    searched = "PATH"
    if env.get(MPI_HOME_ENV):
        home_bin = os.path.join(env[MPI_HOME_ENV], "bin")
        for name in MPI_CXX_NAMES:
            found = which(name, home_bin)
            if found:
                return found, None
        searched = f"{MPI_HOME_ENV}/bin ({home_bin}) or PATH"
    for name in MPI_CXX_NAMES:
        found = which(name, path)
        if found:
            return found, None
    return None, (f"no MPI C++ wrapper: {MPI_CXX_ENV} is unset and none of {', '.join(MPI_CXX_NAMES)} "
                  f"is in {searched}")


def _gist(output):
    """A compiler's failure in a line: its error lines (else its first two), joined."""
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    return " | ".join((errors or lines)[:2]) or "no output"


def check(config_settings, env, which, try_mpi):
    """(problems, wrapper): every problem found, and the MPI wrapper that built the test program
    (None when there are problems)."""
    problems = []
    for var, names in (("CC", C_NAMES), ("CXX", CXX_NAMES)):
        _, why = find_compiler(env, which, var, names)
        if why:
            kind = "C++" if var == "CXX" else "C"
            problems.append(Problem(f"no {kind} compiler: {why}", INSTALL_COMPILER))
    wrapper, why = find_mpi_wrapper(config_settings, env, which)
    if why:
        problems.append(Problem(why, INSTALL_MPI))
    elif not problems:  # the wrapper runs a compiler: its failure means something only without one
        output = try_mpi(wrapper)
        if output is not None:
            problems.append(Problem(
                f"{wrapper} cannot build and link an MPI program (#include <mpi.h>, MPI_Init): "
                + _gist(output), INSTALL_MPI))
    return problems, (None if problems else wrapper)


def message(problems):
    """The one message of a failed check: each problem, then what to install."""
    fixes = []
    for p in problems:
        if p.fix not in fixes:
            fixes.append(p.fix)
    lines = ["gj-mpirun cannot be built on this machine:"]
    lines += [f"  - {p.what}" for p in problems]
    lines.append("Install " + " and ".join(what for what, _ in fixes)
                 + ", then run pip again (docs/packaging.md, \"pip\"):")
    lines += [f"  {line}" for _, how in fixes for line in how]
    return "\n".join(lines)


def with_mpi(config_settings, wrapper):
    """The config settings scikit-build-core gets: the caller's, plus the checked wrapper as
    MPI_CXX_COMPILER (a caller's own -C value is kept: it was the one checked)."""
    settings = dict(config_settings or {})
    if not _setting(settings, MPI_CXX_DEFINE):
        settings[MPI_CXX_DEFINE] = wrapper
    return settings


def system_which(name, path):
    return shutil.which(name, path=path)


def system_try_mpi(wrapper):
    """None when `wrapper` compiles and links MPI_PROGRAM, else its output."""
    with tempfile.TemporaryDirectory(prefix="gj-pip-mpi-") as tmp:
        source = os.path.join(tmp, "mpi_check.cpp")
        with open(source, "w") as f:
            f.write(MPI_PROGRAM)
        try:
            run = subprocess.run([wrapper, source, "-o", os.path.join(tmp, "mpi_check")],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            return str(e)
        return None if run.returncode == 0 else (run.stdout or f"exit status {run.returncode}")


def check_system(config_settings, env):
    """check() on this machine."""
    return check(config_settings, env, system_which, system_try_mpi)


def main():
    """`python3 packaging/pip/gj_pip_preflight.py`: this machine's answer before a `pip install`:
    the MPI wrapper it would build against (exit 0), or the message pip would show (exit 1)."""
    problems, wrapper = check_system(None, os.environ)
    if problems:
        print(message(problems), file=sys.stderr)
        return 1
    print(f"gj-mpirun can be built here; MPI C++ wrapper: {wrapper}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
