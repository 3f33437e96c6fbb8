#!/bin/bash
# Job start cost of gj-mpirun vs a hand-written mpiexec, on the same namespaced 3-pod cluster
# (tests/multihost/cluster.sh): master + 2 workers, 1 slot each, the job is mh_probe (one
# allreduce). The workers run gj-mpirun (sshd) throughout; only the master's command differs:
#   gj-mpirun      the platform's master environment, `gj-mpirun <probe>` (readiness gate,
#                  own sshd, then mpiexec)
#   hand-written   plain sshd in the background, then the mpiexec line a user would write
#                  (tests/multihost/plain_pod.sh: keys copied to 0600, ssh options, FQDNs)
# Each repetition runs both, alternating which goes first; time = master pod start to exit.
# Usage: job_start.sh --gj <gj-mpirun> --probe <mh_probe> [--reps N] [--out FILE.md]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../tests/multihost/scenario.sh"

reps=5 out="" gj="" probe=""
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --gj) gj=$2; shift 2 ;;
    --probe) probe=$2; shift 2 ;;
    *) echo "usage: job_start.sh --gj <gj-mpirun> --probe <mh_probe> [--reps N] [--out FILE.md]" >&2; exit 2 ;;
  esac
done
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || mh_die "--reps '$reps' is not a positive integer"
mh_scenario_init "$gj" "$probe"
mh_up bench 2
master=bench-master-0
log=$(mh_podlog "$master")
for w in bench-worker-0 bench-worker-1; do mh_agent_pod "$w" 1 0 1 0 -- "$MH_PROG"; done

run_once() {  # <gj|plain>; sets ms, checks the job really ran
  local t0
  : >"$log"
  t0=$(mh_now_ms)
  if [ "$1" = gj ]; then
    mh_agent_pod "$master" 1 0 1 0 -- "$MH_PROG"
  else
    mh_pod_start "$master" -- "$MH_DIR/plain_pod.sh" mpiexec \
      bench-master-0.bench:1,bench-worker-0.bench:1,bench-worker-1.bench:1 3 "$MH_PROG"
  fi
  mh_pod_wait "$master" 60
  ms=$(( $(mh_now_ms) - t0 ))
  [ "$MH_RC" = 0 ] || mh_die "$1 run exited $MH_RC"
  grep -q '^ALLREDUCE ok sum=6 expected=6$' "$log" || mh_die "$1 run: no correct allreduce"
}

gj_ms=() plain_ms=() rows=""
for ((i = 1; i <= reps; i++)); do
  if (( i % 2 )); then order=(gj plain); else order=(plain gj); fi
  for kind in "${order[@]}"; do
    run_once "$kind"
    if [ "$kind" = gj ]; then gj_ms+=("$ms"); g=$ms; else plain_ms+=("$ms"); p=$ms; fi
  done
  rows+="| $i | ${order[0]} | $g | $p |"$'\n'
  mh_log "rep $i: gj-mpirun $g ms, hand-written $p ms"
done

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }
gm=$(median "${gj_ms[@]}") pm=$(median "${plain_ms[@]}")
ratio=$(awk -v a="$gm" -v b="$pm" 'BEGIN {printf "%.2f", a / b}')
report=$(cat <<MD
| rep | first | gj-mpirun (ms) | hand-written mpiexec (ms) |
|---:|---|---:|---:|
${rows}| **median** | | **$gm** | **$pm** |

Ratio gj-mpirun / hand-written (medians): **$ratio**
MD
)
echo "$report"
if [ -n "$out" ]; then
  {
    echo "# Job start: gj-mpirun vs a hand-written mpiexec"
    echo
    echo "- command: \`bench/launch/job_start.sh --reps $reps --gj <build>/$(basename "$MH_GJ") --probe <build>/$(basename "$MH_PROG")\`"
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- load average at the end: $(cut -d" " -f1-3 /proc/loadavg) (the machine is shared; runs alternate so both sides see the same load)"
    echo "- machine: $(nproc) CPUs ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), $(uname -sr), $(mpiexec --version | head -n1)"
    echo "- job: 3 pods (master + 2 workers, 1 slot each, network namespaces on one machine), mh_probe (MPI_Init, one allreduce, MPI_Finalize)"
    echo "- time: master pod start to master pod exit; workers already running gj-mpirun (sshd)"
    echo
    echo "$report"
    echo
    # Quoted heredoc: nothing in this text is expanded or run.
    cat <<'TXT'
Both sides start an sshd on the master (host key generated first) and run the same mpiexec
over ssh. gj-mpirun's extra work before mpiexec: reading `mpiexec --version`, copying the
Secret's keys to private files, and the readiness gate (DNS + TCP to every host's sshd; all
hosts are up here, so it passes at the first probe). The hand-written side is
tests/multihost/plain_pod.sh: the minimum that works on these pods (keys copied to 0600, FQDNs
kept, ssh options), without any waiting, so it fails when a worker is late.

Regenerate (root): `bench/launch/job_start.sh --reps 8 --gj build/agent/gj-mpirun
--probe build/tests/multihost/mh_probe --out docs/bench-jobstart.md`
TXT
  } >"$out"
  mh_log "results written to $out"
fi
