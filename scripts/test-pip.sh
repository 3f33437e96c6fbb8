#!/usr/bin/env bash
# CI's `pip` stage (.ci/run, after `tensorflow`): `pip install` as a user of their own Python does it
# (docs/packaging.md, "pip"), from a clean clone of HEAD (committed files only), with no PYTHONPATH
# and no LD_LIBRARY_PATH anywhere:
#   1. the sdist (`python -m build --sdist`, environment pip-build of scripts/pypi/pins.txt) and one
#      wheel built from it by pip (PEP 517: scikit-build-core and CMake; CUDA off, which CI's
#      machine cannot run anyway, to keep the build short: one build for both environments);
#   2. a venv that sees the TensorFlow environment's packages (TensorFlow 2.21, Keras 3; a .pth
#      file: the TF environment itself is left as it is) gets the wheel, and the seed's TensorFlow
#      script (examples/python/horovod_seed_tf.py) trains through the installed gj-mpirun;
#   3. a venv that sees Debian's packages (--system-site-packages: torch 1.13) gets it too, and the
#      seed's PyTorch script (examples/python/horovod_seed.py) trains the same way;
#   4. `pip uninstall` leaves both venvs file for file as they were;
#   5. without an MPI (no wrapper on PATH) and with an MPI lacking its headers, pip fails with the
#      one message of packaging/pip/gj_pip_preflight.py, no CMake log.
# Backend versions: the pip-build lines of pins.txt, as constraints of pip's and build's isolated
# build environments. GJ_PIP_KEEP=1 keeps the work folder (printed) for a look afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
t0=$SECONDS
say() { echo "== pip [$((SECONDS - t0)) s] $*"; }
fail() { echo "test-pip: FAILED: $*" >&2; exit 1; }

scripts/install-deps.sh --tf >/dev/null
tf_env=${GJ_VENV_ROOT:-/opt/gj-venvs}/tf
build_env=$(scripts/pypi/make-venv.sh pip-build)
unset PYTHONPATH LD_LIBRARY_PATH

work=$(mktemp -d /tmp/gj-pip.XXXXXX)
if [ "${GJ_PIP_KEEP:-0}" = 1 ]; then
  echo "test-pip: work folder $work (kept)"
else
  trap 'rm -rf "$work"' EXIT
fi
awk '$1 == "pip-build" && $2 !~ /^@/ { print $2 }' scripts/pypi/pins.txt >"$work/constraints.txt"
# pip before 25.3 takes PIP_CONSTRAINT into its build environments, later ones PIP_BUILD_CONSTRAINT.
export PIP_CONSTRAINT="$work/constraints.txt" PIP_BUILD_CONSTRAINT="$work/constraints.txt"
export PIP_DISABLE_PIP_VERSION_CHECK=1 CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"

say "1. clean clone of $(git rev-parse --short HEAD), sdist, wheel"
git clone -q "$repo" "$work/src"
git -C "$work/src" checkout -q --detach "$(git rev-parse HEAD)"
version=$(sed -n 's/^  VERSION \([0-9.]*\)$/\1/p' "$work/src/CMakeLists.txt" | head -n 1)
[ -n "$version" ] || fail "no project VERSION in CMakeLists.txt"
"$build_env/bin/python" -m build -q --sdist --outdir "$work/dist" "$work/src" >"$work/sdist.log" 2>&1 \
  || { cat "$work/sdist.log"; fail "python -m build --sdist"; }
sdist="$work/dist/gj_mpirun-$version.tar.gz"
[ -f "$sdist" ] || fail "no $sdist (made: $(ls "$work/dist"))"

# The venv of step 2 builds the wheel: its Python sees TensorFlow, so the wheel has gj.tensorflow's
# compiled ops built against it (cmake/GjPipWheel.cmake).
/usr/bin/python3 -m venv "$work/tf"
site() { "$1/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))'; }
site "$tf_env" >"$(site "$work/tf")/gj-test-tf-environment.pth"
find "$work/tf" | sort >"$work/tf.before"
b0=$SECONDS
"$work/tf/bin/pip" wheel -q --no-deps -w "$work/dist" --config-settings=cmake.define.GJ_WITH_CUDA=OFF "$sdist" \
  >"$work/wheel.log" 2>&1 || { tail -n 60 "$work/wheel.log"; fail "pip wheel $sdist"; }
say "   wheel built in $((SECONDS - b0)) s: $(cd "$work/dist" && ls ./*.whl)"
wheel=$(ls "$work/dist"/gj_mpirun-"$version"-*.whl)
/usr/bin/python3 - "$wheel" gj/__init__.py gj/_config.py gj/libgj_collectives.so.0 gj/tensorflow/_gj_tf_ops.so \
  gj/horovod_alias/horovod/__init__.py "gj_mpirun-$version.data/scripts/gj-mpirun" <<'PY' || fail "the wheel lacks files"
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
missing = [f for f in sys.argv[2:] if f not in names]
print("test-pip: the wheel lacks " + ", ".join(missing) if missing else "", end="")
sys.exit(1 if missing else 0)
PY

# A job through the environment's gj-mpirun: a master pod with no workers, 2 ranks on this machine;
# `python3` (gj-mpirun's --python) is the environment's, as in an activated venv.
# Its output goes to <output folder>.log, shown when the job fails.
job() {  # $1 env, $2 output folder; then the environment's own variables and the command
  local venv=$1 out=$2 j0=$SECONDS
  shift 2
  mkdir -p "$out"
  if ! (cd "$work" && env -u PYTHONPATH -u LD_LIBRARY_PATH PATH="$venv/bin:$PATH" \
    GJ_TRAINING_ROLE=master GJ_TRAINING_VC_JOB_NAME=pip GJ_TRAINING_POD_NAME=pip-master-0 \
    GJ_TRAINING_MASTER_CPU_LIMIT=2 GJ_TRAINING_MASTER_GPU_LIMIT=0 GJ_TRAINING_MASTER_REPLICAS=1 \
    GJ_TRAINING_WORKER_CPU_LIMIT=0 GJ_TRAINING_WORKER_GPU_LIMIT=0 GJ_TRAINING_WORKER_REPLICAS=0 \
    MPI_HOST= GJ_SEED_OUTPUT="$out" "$@") >"$out.log" 2>&1; then
    tail -n 40 "$out.log"
    return 1
  fi
  say "   trained in $((SECONDS - j0)) s; saved: $(ls "$out" | tr '\n' ' ')"
}
installed() {  # $1 env: gj-mpirun is the environment's, and gj with its library come from it
  local venv=$1 got
  got=$(env PATH="$venv/bin:$PATH" bash -c 'command -v gj-mpirun')
  [ "$got" = "$venv/bin/gj-mpirun" ] || fail "gj-mpirun on PATH is $got, not $venv/bin/gj-mpirun"
  got=$("$venv/bin/gj-mpirun" --version)
  # Static on Debian (its static C and C++ libraries are there).
  [ "$got" = "gj-mpirun $version (static)" ] || fail "gj-mpirun --version said \"$got\""
  (cd "$work" && "$venv/bin/python" -c 'import gj, sys
prefix = sys.argv[1]
assert gj.__file__.startswith(prefix) and gj.library_path == gj.__file__.replace("__init__.py", "libgj_collectives.so.0"), (gj.__file__, gj.library_path)
assert gj.__version__ == sys.argv[2], gj.__version__' "$venv" "$version") || fail "gj imported from elsewhere"
}

say "2. venv with TensorFlow's packages: pip install, the seed's TensorFlow script (Keras 3)"
"$work/tf/bin/pip" install -q --no-index "$wheel" || fail "pip install $wheel into $work/tf"
installed "$work/tf"
(cd "$work" && "$work/tf/bin/python" -c 'import tensorflow as tf, keras, gj.tensorflow as hvd
assert keras.__version__.startswith("3."), keras.__version__
assert hvd.collectives_path() == "ops", hvd.collectives_path()') 2>/dev/null || fail "Keras 3 or gj.tensorflow's compiled ops missing"
job "$work/tf" "$work/out-tf" TF_CPP_MIN_LOG_LEVEL=2 GJ_SEED_SAMPLES=1024 GJ_SEED_EPOCHS=1 \
  gj-mpirun --master-host localhost --no-sshd "$work/src/examples/python/horovod_seed_tf.py" \
  || fail "the seed's TensorFlow script through $work/tf/bin/gj-mpirun"
ls "$work/out-tf" | grep -q . || fail "the TensorFlow seed saved nothing in $work/out-tf"

say "3. venv with Debian's packages: pip install, the seed's PyTorch script"
/usr/bin/python3 -m venv --system-site-packages "$work/torch"
find "$work/torch" | sort >"$work/torch.before"
"$work/torch/bin/pip" install -q --no-index "$wheel" || fail "pip install $wheel into $work/torch"
installed "$work/torch"
job "$work/torch" "$work/out-torch" GJ_SEED_SAMPLES=1000 GJ_SEED_EPOCHS=1 \
  gj-mpirun --master-host localhost --no-sshd "$work/src/examples/python/horovod_seed.py" \
  || fail "the seed's PyTorch script through $work/torch/bin/gj-mpirun"
[ -f "$work/out-torch/model.pth" ] || fail "the PyTorch seed saved no $work/out-torch/model.pth"

say "4. pip uninstall leaves no file of gj"
for venv in tf torch; do
  "$work/$venv/bin/pip" uninstall -q -y gj-mpirun
  find "$work/$venv" | sort >"$work/$venv.after"
  diff "$work/$venv.before" "$work/$venv.after" >"$work/$venv.diff" \
    || { cat "$work/$venv.diff"; fail "pip uninstall left these differences in $work/$venv"; }
done

say "5. no MPI, and an MPI without headers: one message, no CMake"
mkdir "$work/no-mpi-bin"
for p in cc c++ gcc g++; do ln -s "$(command -v "$p")" "$work/no-mpi-bin/$p"; done
printf '#!/bin/sh\n# an MPI whose development files are missing: no include folder of MPI\nexec c++ "$@"\n' \
  >"$work/no-mpi-bin/headerless-mpicxx"
chmod +x "$work/no-mpi-bin/headerless-mpicxx"
expect_message() {  # $1 what is missing; then env assignments for pip
  local what=$1 log="$work/no-mpi.log"
  shift
  if env "$@" "$work/torch/bin/pip" wheel --no-deps -w "$work/no-wheel" "$sdist" >"$log" 2>&1; then
    fail "pip built a wheel with $what"
  fi
  grep -q "gj-mpirun cannot be built on this machine:" "$log" && grep -q "apt-get install libopenmpi-dev" "$log" \
    && ! grep -q "CMake Error\|Traceback" "$log" || { cat "$log"; fail "pip's output with $what is not the one message"; }
  sed -n '/cannot be built/,/or set GJ_MPI_CXX/p' "$log" | sed 's/^/   | /'
}
expect_message "no MPI on PATH" PATH="$work/torch/bin:$work/no-mpi-bin"
expect_message "an MPI without mpi.h" GJ_MPI_CXX="$work/no-mpi-bin/headerless-mpicxx"
grep -q "mpi.h" "$work/no-mpi.log" || fail "the message does not name mpi.h"
say "ok"
