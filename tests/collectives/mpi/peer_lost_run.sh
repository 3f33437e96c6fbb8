#!/bin/sh
# Runs one coll.peer_lost case and judges it by its wrappers' verdicts (rank_monitor_double.h),
# not by mpiexec's status: Open MPI fails a job whose ranks did not finalize MPI, which is what
# the survivors of a failing job must do.
#   peer_lost_run.sh DIR NP MPIEXEC_COMMAND...
set -u
dir=$1 np=$2
shift 2
rm -rf "$dir"
"$@"
status=$?
verdicts=$(find "$dir" -name 'verdict.*' 2>/dev/null | wc -l)
if [ "$verdicts" -ne "$np" ]; then
  echo "peer_lost_run: $verdicts of $np ranks left a verdict under $dir (mpiexec exit status $status)" >&2
  exit 1
fi
failed=0
for f in $(find "$dir" -name 'verdict.*' | sort); do
  v=$(cat "$f")
  if [ "$v" != "ok" ]; then
    echo "peer_lost_run: ${f##*/}: $v" >&2
    failed=1
  fi
done
[ "$failed" -eq 0 ] && echo "peer_lost_run: every rank's verdict is ok (mpiexec exit status $status)"
exit "$failed"
