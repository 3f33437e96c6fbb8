#!/usr/bin/env bash
# Installs everything gj-mpirun needs to build and test, from Debian's packages.
# Used by the README's quick start and by .ci/run. Idempotent; needs root (or sudo).
#   scripts/install-deps.sh [--stack] [--cross] [--tf] [--impi]
#     --stack  also mmdebstrap: the current-stack stage's Debian 13 root (scripts/stack/)
#     --cross  also the aarch64 cross compiler and qemu-user (scripts/ci/arm64-agent.sh)
#     --tf     also the PyPI environment "tf" (TensorFlow, Keras 3 and 2: gj.tensorflow)
#     --impi   also the PyPI environment "impi" (Intel MPI's runtime)
# PyPI environments are made by scripts/pypi/make-venv.sh from the pins in scripts/pypi/pins.txt.
set -euo pipefail

extra=()
venvs=()
for a in "$@"; do
  case "$a" in
    --stack) extra+=(mmdebstrap) ;;
    --cross) extra+=(g++-aarch64-linux-gnu qemu-user-static) ;;
    --tf) venvs+=(tf) ;;
    --impi) venvs+=(impi) ;;
    *) echo "install-deps.sh: unknown argument \"$a\" (use --stack, --cross, --tf, --impi)" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake pkg-config file
  libcli11-dev libfmt-dev libspdlog-dev catch2
  libopenmpi-dev openmpi-bin
  openssh-server openssh-client
  iproute2 util-linux procps
  prometheus  # agent.job_view.metrics: a real Prometheus server scrapes gj-mpirun's endpoint
  python3 python3-venv python3-numpy python3-yaml python3-mpi4py python3-pytest python3-torch
  mpich libmpich-dev
  clang libclang-rt-dev
  "${extra[@]}"
)

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
for v in "${venvs[@]}"; do
  echo "install-deps: PyPI environment $v: $($sudo "$(dirname "$0")/pypi/make-venv.sh" "$v")"
done
