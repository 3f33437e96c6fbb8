#!/bin/sh
# Runs a command in an image with Intel MPI's runtime: its bin first in PATH (gj-mpirun detects
# Intel MPI from `mpiexec --version`), I_MPI_ROOT, and LD_LIBRARY_PATH with GJ_IMPI_ABI_DIR
# (libmpich.so.12 -> Intel MPI's libmpi.so.12) so programs built against Debian's MPICH run on
# Intel MPI. Without the runtime: exit 77 (skip), a failure under CI=true.
root=${GJ_IMPI_ROOT:-/opt/gj-venvs/impi}
abi=${GJ_IMPI_ABI_DIR:-}
if [ ! -x "$root/bin/mpiexec.hydra" ] || [ -z "$abi" ] || [ ! -e "$abi/libmpich.so.12" ]; then
  echo "with_impi.sh: no Intel MPI runtime at GJ_IMPI_ROOT=$root (scripts/install-deps.sh --impi) or no libmpich.so.12 in GJ_IMPI_ABI_DIR='$abi'" >&2
  [ "${CI:-}" = true ] && { echo "with_impi.sh: FAIL (CI=true: the runtime must be there)" >&2; exit 1; }
  exit 77
fi
PATH="$root/bin:$PATH" I_MPI_ROOT=$root LD_LIBRARY_PATH="$abi:$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$@"
