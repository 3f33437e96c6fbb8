"""packaging/pip/gj_pip_preflight.py: what `pip install` finds missing before CMake runs, and the one
message it prints. Pure tests over a fake file system of programs (which) and a fake MPI trial
build (try_mpi); test_system_* run the real check on this machine (ctest packaging.pip_preflight_system)."""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PIP_DIR = os.path.join(HERE, "..", "..", "packaging", "pip")
sys.path.insert(0, PIP_DIR)

import gj_pip_preflight as pf  # noqa: E402

COMPILERS = {"/usr/bin/cc", "/usr/bin/c++"}


def fake_which(programs):
    def which(name, path):
        if "/" in name:
            return name if name in programs else None
        for d in path.split(os.pathsep):
            if f"{d}/{name}" in programs:
                return f"{d}/{name}"
        return None
    return which


def builds(wrapper):
    return None


def never_called(wrapper):
    raise AssertionError(f"try_mpi({wrapper}) called")


def run(programs, env=None, settings=None, try_mpi=builds):
    env = {"PATH": "/usr/local/bin:/usr/bin", **(env or {})}
    return pf.check(settings, env, fake_which(programs), try_mpi)


def test_everything_present_gives_the_wrapper_on_path():
    problems, wrapper = run(COMPILERS | {"/usr/bin/mpicxx"})
    assert problems == [] and wrapper == "/usr/bin/mpicxx"


def test_names_are_tried_in_order_each_over_the_whole_path():
    # As CMake's find_program without NAMES_PER_DIR: mpicxx anywhere before mpiicpx earlier on PATH.
    problems, wrapper = run(COMPILERS | {"/usr/local/bin/mpiicpx", "/usr/bin/mpicxx"})
    assert problems == [] and wrapper == "/usr/bin/mpicxx"


def test_no_mpi_wrapper_names_every_name_and_what_to_install():
    problems, wrapper = run(COMPILERS, try_mpi=never_called)
    assert wrapper is None and len(problems) == 1
    assert problems[0].what == ("no MPI C++ wrapper: GJ_MPI_CXX is unset and none of mpicxx, mpic++, "
                                "mpiCC, mpiicpx, mpiicpc is in PATH")
    text = pf.message(problems)
    assert text.startswith("gj-mpirun cannot be built on this machine:\n  - no MPI C++ wrapper")
    assert "apt-get install libopenmpi-dev openmpi-bin" in text
    assert "conda install -c conda-forge openmpi-mpicxx" in text
    assert "set GJ_MPI_CXX" in text


def test_gj_mpi_cxx_is_taken_before_path_and_a_bad_one_is_named():
    programs = COMPILERS | {"/usr/bin/mpicxx", "/opt/intel/bin/mpiicpx"}
    assert run(programs, {"GJ_MPI_CXX": "/opt/intel/bin/mpiicpx"})[1] == "/opt/intel/bin/mpiicpx"
    problems, wrapper = run(programs, {"GJ_MPI_CXX": "/opt/none/mpicxx"}, try_mpi=never_called)
    assert wrapper is None
    assert [p.what for p in problems] == ["GJ_MPI_CXX='/opt/none/mpicxx' is not an executable program"]


def test_a_config_setting_wins_over_gj_mpi_cxx_and_is_kept():
    programs = COMPILERS | {"/usr/bin/mpicxx", "/opt/mpich/bin/mpicxx"}
    settings = {pf.MPI_CXX_DEFINE: "/opt/mpich/bin/mpicxx"}
    problems, wrapper = run(programs, {"GJ_MPI_CXX": "/usr/bin/mpicxx"}, settings)
    assert wrapper == "/opt/mpich/bin/mpicxx"
    assert pf.with_mpi(settings, wrapper) == settings
    # pip passes a repeated -C as a list: the last one counts.
    listed = {pf.MPI_CXX_DEFINE: ["/usr/bin/mpicxx", "/opt/mpich/bin/mpicxx"]}
    assert run(programs, {}, listed)[1] == "/opt/mpich/bin/mpicxx"
    problems, _ = run(programs, {}, {pf.MPI_CXX_DEFINE: "mpiicpx"}, try_mpi=never_called)
    assert [p.what for p in problems] == [f"-C {pf.MPI_CXX_DEFINE}='mpiicpx' is not an executable program"]


def test_mpi_home_bin_is_searched_before_path():
    programs = COMPILERS | {"/usr/bin/mpicxx", "/opt/ompi/bin/mpic++"}
    assert run(programs, {"MPI_HOME": "/opt/ompi"})[1] == "/opt/ompi/bin/mpic++"
    problems, _ = run(COMPILERS, {"MPI_HOME": "/opt/ompi"}, try_mpi=never_called)
    assert problems[0].what.endswith("is in MPI_HOME/bin (/opt/ompi/bin) or PATH")


def test_with_mpi_hands_the_checked_wrapper_to_cmake_and_keeps_other_settings():
    settings = {"cmake.define.GJ_WITH_CUDA": "OFF"}
    assert pf.with_mpi(settings, "/usr/bin/mpicxx") == {
        "cmake.define.GJ_WITH_CUDA": "OFF", "cmake.define.MPI_CXX_COMPILER": "/usr/bin/mpicxx"}
    assert settings == {"cmake.define.GJ_WITH_CUDA": "OFF"}  # the caller's dict is not changed
    assert pf.with_mpi(None, "/usr/bin/mpicxx") == {"cmake.define.MPI_CXX_COMPILER": "/usr/bin/mpicxx"}


def test_missing_headers_are_named_with_the_compiler_error():
    output = ("/tmp/x/mpi_check.cpp:1:10: fatal error: mpi.h: No such file or directory\n"
              "    1 | #include <mpi.h>\ncompilation terminated.\n")
    problems, wrapper = run(COMPILERS | {"/usr/bin/mpicxx"}, try_mpi=lambda w: output)
    assert wrapper is None
    assert [p.what for p in problems] == [
        "/usr/bin/mpicxx cannot build and link an MPI program (#include <mpi.h>, MPI_Init): "
        "/tmp/x/mpi_check.cpp:1:10: fatal error: mpi.h: No such file or directory"]
    assert problems[0].fix == pf.INSTALL_MPI


def test_no_compiler_is_named_and_the_mpi_wrapper_is_not_tried():
    problems, wrapper = run({"/usr/bin/mpicxx"}, try_mpi=never_called)
    assert wrapper is None
    assert [p.what for p in problems] == [
        "no C compiler: $CC is unset and none of cc, gcc, clang is on PATH",
        "no C++ compiler: $CXX is unset and none of c++, g++, clang++ is on PATH"]
    text = pf.message(problems)
    assert text.count("apt-get install g++") == 1  # one fix for both


def test_cc_and_cxx_variables_are_the_compilers_looked_at():
    programs = {"/usr/bin/mpicxx", "/usr/bin/gcc-12", "/usr/bin/g++-12"}
    assert run(programs, {"CC": "gcc-12", "CXX": "g++-12 -std=c++17"})[0] == []
    problems, _ = run(programs | COMPILERS, {"CXX": "/opt/none/clang++"}, try_mpi=never_called)
    assert [p.what for p in problems] == ["no C++ compiler: CXX='/opt/none/clang++' is not an executable program"]


def test_message_lists_each_fix_once_in_order():
    problems = [pf.Problem("a", pf.INSTALL_COMPILER), pf.Problem("b", pf.INSTALL_MPI),
                pf.Problem("c", pf.INSTALL_MPI)]
    lines = pf.message(problems).splitlines()
    assert lines[:4] == ["gj-mpirun cannot be built on this machine:", "  - a", "  - b", "  - c"]
    assert lines[4] == ("Install a C and C++ compiler and an MPI with its development files (its C++ "
                        "wrapper and mpi.h), then run pip again (docs/packaging.md, \"pip\"):")
    assert len(lines) == 5 + len(pf.INSTALL_COMPILER[1]) + len(pf.INSTALL_MPI[1])


# ---- the real check on this machine (packaging.pip_preflight_system) ----------------------------

def preflight(env):
    return subprocess.run([sys.executable, os.path.join(PIP_DIR, "gj_pip_preflight.py")], env=env,
                          capture_output=True, text=True, timeout=120)


def test_system_this_machine_builds_an_mpi_program():
    r = preflight(dict(os.environ))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("gj-mpirun can be built here; MPI C++ wrapper: /")


def test_system_a_wrapper_without_mpi_headers_fails_with_the_message(tmp_path):
    # An MPI whose development files are missing (Debian's openmpi-bin without libopenmpi-dev):
    # its wrapper runs the compiler without MPI's include folder.
    wrapper = tmp_path / "mpicxx"
    wrapper.write_text('#!/bin/sh\nexec c++ "$@"\n')
    wrapper.chmod(0o755)
    r = preflight({**os.environ, "GJ_MPI_CXX": str(wrapper)})
    assert r.returncode == 1
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert lines[0] == "gj-mpirun cannot be built on this machine:"
    assert lines[1].startswith(f"  - {wrapper} cannot build and link an MPI program")
    assert "mpi.h" in lines[1]
    assert "Traceback" not in r.stderr
