#!/bin/bash
# Is this image's MPICH affected by the MPI_Finalize deadlock of MPICH < 4.2 with ch4:ucx over
# TCP (docs/multihost.md)? Runs the smallest MPI program (init, one allreduce, finalize) N times
# on 4 local ranks forced onto UCX's TCP transport, with Open MPI's mpiexec as the baseline, and
# prints how many runs did not end within the limit.
#   scripts/mpich-finalize-check.sh [runs=20] [limit-s=10]
set -u
runs=${1:-20} limit=${2:-10}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/min.c" <<'C'
#include <mpi.h>
int main(int argc, char** argv) {
  int r, s;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Allreduce(&r, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
C
# flavour name | compiler | launcher | launcher arguments forcing TCP between the ranks (over
# loopback: Open MPI 5's TCP transport leaves lo out unless it is named)
flavours=("MPICH (ch4:ucx, UCX_TLS=tcp,self)|mpicc.mpich|mpiexec.mpich|-genv UCX_TLS tcp,self -genv UCX_NET_DEVICES lo -genv MPIR_CVAR_NOLOCAL 1"
          "Open MPI (btl tcp,self: baseline)|mpicc.openmpi|mpiexec.openmpi|--allow-run-as-root --oversubscribe --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo")
printf '| flavour | runs | did not end in %s s | failed |\n|---|---|---|---|\n' "$limit"
for f in "${flavours[@]}"; do
  IFS='|' read -r name cc launcher args <<<"$f"
  if ! command -v "$cc" >/dev/null || ! command -v "$launcher" >/dev/null; then
    printf '| %s | - | (%s or %s not installed) | - |\n' "$name" "$cc" "$launcher"; continue
  fi
  "$cc" -o "$dir/$cc" "$dir/min.c" || exit 1
  hung=0 failed=0
  for _ in $(seq "$runs"); do
    # shellcheck disable=SC2086  # $args is a list of arguments
    timeout -s KILL "$limit" "$launcher" -n 4 $args "$dir/$cc" >/dev/null 2>&1
    case $? in 0) ;; 137) hung=$((hung + 1)) ;; *) failed=$((failed + 1)) ;; esac
  done 2>/dev/null  # bash's "Killed" notes for the runs the limit ended
  printf '| %s | %d | %d | %d |\n' "$name" "$runs" "$hung" "$failed"
done
