#!/bin/bash
# A small cluster of Kubernetes-like "pods" on one machine, for gj-mpirun's multi-host tests.
#
# Each pod is a network namespace with its own address on a private bridge (the bridge lives
# in a namespace of its own, so nothing is added to the machine's network and no packet can
# leave), plus UTS, mount and PID namespaces made by pod_init.sh: own hostname, a hosts file
# naming every pod as the platform does (<job>-master-0.<job>, <job>-worker-<i>.<job>), own
# /run /tmp /root, and the job's ssh Secret (generated per run) read-only at /root/.ssh.
#
# Sourced by the scenario scripts (functions mh_*), or run directly:
#   cluster.sh check                 can this machine make namespaces? (exit 0, or 77 + reason)
#   cluster.sh sweep                 remove what dead runs left behind (namespaces, run dirs)
#   cluster.sh demo <build-dir> [program [args]]  3-pod demo job through the build's gj-mpirun
# Every name carries MH_PREFIX=gjmh<pid>r<random>, so parallel runs never collide and `sweep`
# can tell a dead run's leftovers (its pid is gone) from a live one's.

MH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MH_POD_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
MH_SUBNET=${MH_SUBNET:-10.77.0}          # private; exists only inside this run's namespaces
MH_SSH_DIR_MODE=${MH_SSH_DIR_MODE:-1777} # a Kubernetes Secret volume's mount point (tmpfs)
MH_SSH_FILE_MODE=${MH_SSH_FILE_MODE:-0644} # Secret defaultMode: group/world-readable
MH_SKIP=77                               # ctest SKIP_RETURN_CODE

declare -A MH_NS MH_ADDR MH_PID
MH_PODS=()
MH_RUN=""

mh_log() { printf '[mh %s] %s\n' "$(date +%T.%3N)" "$*" >&2; }
mh_die() { mh_log "FAIL: $*"; exit 1; }

# Prints why namespaces cannot be made here; returns 0 when they can.
mh_missing_prereqs() {
  if [ "$(id -u)" -ne 0 ]; then echo "not root (uid $(id -u)): network namespaces need root"; return 1; fi
  local t
  for t in ip unshare nsenter mount hostname ssh-keygen ssh /usr/sbin/sshd mpiexec; do
    command -v "$t" >/dev/null 2>&1 || { echo "'$t' not found (install iproute2, util-linux, openssh, openmpi-bin)"; return 1; }
  done
  local probe="gjmh$$probe$RANDOM"
  if ! ip netns add "$probe" 2>/dev/null; then echo "'ip netns add' failed: no permission for network namespaces"; return 1; fi
  if ! ip netns exec "$probe" unshare --uts --mount --pid --fork --mount-proc true 2>/dev/null; then
    ip netns del "$probe"; echo "'unshare --uts --mount --pid' failed inside a network namespace"; return 1
  fi
  ip netns del "$probe"
  return 0
}

# Exits the calling test: skip (77) with the reason, or fail under CI=true, where a skip
# would let the multi-host tests silently vanish.
mh_require() {
  local why
  if why=$(mh_missing_prereqs); then return 0; fi
  if [ "${CI:-}" = "true" ]; then
    mh_log "FAIL (CI=true, skipping is not allowed): cannot build the test cluster: $why"; exit 1
  fi
  mh_log "SKIP: cannot build the test cluster: $why"; exit "$MH_SKIP"
}

# Is the run that owns a name still alive? (A killed owner can linger as a zombie.)
mh_owner_alive() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# Removes namespaces and run dirs whose owning process is gone.
mh_sweep() {
  local ns owner d
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^gjmh[0-9]+r[0-9]+-' || true); do
    owner=${ns#gjmh}; owner=${owner%%r*}
    if ! mh_owner_alive "$owner"; then
      mh_log "sweep: removing leftover namespace $ns (owner pid $owner is gone)"
      mh_kill_ns "$ns" KILL
      ip netns del "$ns" 2>/dev/null || true
    fi
  done
  for d in /tmp/gjmh.*; do
    [ -d "$d" ] || continue
    owner=${d#/tmp/gjmh.}; owner=${owner%%.*}
    if [ -n "$owner" ] && ! mh_owner_alive "$owner"; then
      mh_log "sweep: removing leftover run dir $d"; rm -rf "$d"
    fi
  done
}

mh_kill_ns() {  # <netns> <signal>: every process in one of our namespaces
  local pids
  pids=$(ip netns pids "$1" 2>/dev/null || true)
  [ -n "$pids" ] && kill -"$2" $pids 2>/dev/null
  return 0
}

# mh_up <job> <workers>: namespaces, links, addresses, keys, hosts files. MH_LATE_NAMES
# (pod names) are left out of the hosts files until mh_hosts_add. Installs the cleanup trap.
mh_up() {
  local job=$1 workers=$2 i
  MH_JOB=$job
  MH_PREFIX="gjmh$$r$RANDOM"
  MH_RUN=$(mktemp -d "/tmp/gjmh.$$.XXXXXX")
  trap mh_down EXIT
  trap 'exit 143' TERM
  trap 'exit 130' INT
  mkdir -p "$MH_RUN/hosts" "$MH_RUN/logs" "$MH_RUN/keys"
  MH_PODS=("${MH_FIRST_POD:-$job-master-0}")  # MH_FIRST_POD: an MPIJob's <job>-launcher
  for ((i = 0; i < workers; i++)); do MH_PODS+=("$job-worker-$i"); done

  ip netns add "$MH_PREFIX-br" || mh_die "ip netns add $MH_PREFIX-br"
  ip -n "$MH_PREFIX-br" link add br0 type bridge && ip -n "$MH_PREFIX-br" link set br0 up \
    || mh_die "bridge in $MH_PREFIX-br"
  local n=0 pod ns
  for pod in "${MH_PODS[@]}"; do
    ns="$MH_PREFIX-p$n"
    MH_NS[$pod]=$ns
    MH_ADDR[$pod]="$MH_SUBNET.$((10 + n))"
    ip netns add "$ns" || mh_die "ip netns add $ns"
    ip -n "$MH_PREFIX-br" link add "v$n" type veth peer name eth0 netns "$ns" || mh_die "veth for $pod"
    ip -n "$MH_PREFIX-br" link set "v$n" master br0 && ip -n "$MH_PREFIX-br" link set "v$n" up \
      || mh_die "bridge port for $pod"
    # IPv4 only: no link-local IPv6 addresses for Open MPI to try.
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 \
      >/dev/null 2>&1 || true
    ip -n "$ns" addr add "${MH_ADDR[$pod]}/24" dev eth0 && ip -n "$ns" link set eth0 up \
      && ip -n "$ns" link set lo up || mh_die "address for $pod"
    n=$((n + 1))
  done
  mh_make_secret
  printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"$MH_RUN/resolv.conf"
  for pod in "${MH_PODS[@]}"; do
    # Like a Kubernetes pod: localhost, then the pod's own address with its FQDN and short name.
    printf '127.0.0.1\tlocalhost\n%s\t%s.%s\t%s%s\n' "${MH_ADDR[$pod]}" "$pod" "$job" "$pod" \
      "${MH_SVC_DOMAIN:+ $pod.$job.$MH_SVC_DOMAIN}" >"$MH_RUN/hosts/$pod"
  done
  for pod in "${MH_PODS[@]}"; do
    case " ${MH_LATE_NAMES:-} " in *" $pod "*) continue ;; esac
    mh_hosts_add "$pod"
  done
  mh_log "cluster $MH_PREFIX up: ${MH_PODS[*]} (run dir $MH_RUN)"
}

# Adds <pod>.<job> to every other pod's hosts file, in place (the files are bind mounts; a
# new inode would not be seen), as a headless Service's DNS record appears.
mh_hosts_add() {
  local name=$1 pod
  for pod in "${MH_PODS[@]}"; do
    [ "$pod" = "$name" ] && continue
    # MH_SVC_DOMAIN (e.g. ns.svc): also the <pod>.<job>.<ns>.svc name an MPIJob's hostfile uses.
    printf '%s\t%s.%s%s\n' "${MH_ADDR[$name]}" "$name" "$MH_JOB" "${MH_SVC_DOMAIN:+ $name.$MH_JOB.$MH_SVC_DOMAIN}" \
      >>"$MH_RUN/hosts/$pod"
  done
}

# The job's ssh Secret as Volcano's ssh plugin makes it, laid out as Kubernetes mounts a
# Secret volume: files are symlinks into ..data, modes group/world-readable.
mh_make_secret() {
  local k="$MH_RUN/keys" s="$MH_RUN/ssh" stamp f pod
  ssh-keygen -q -t rsa -b 2048 -N '' -C "gjmh-$MH_JOB" -f "$k/id_rsa" || mh_die "ssh-keygen"
  cp "$k/id_rsa.pub" "$k/authorized_keys"
  {
    printf 'StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n'
  } >"$k/config"
  stamp="..$(date +%Y_%m_%d_%H_%M_%S).$$"
  mkdir -p "$s/$stamp"
  for f in id_rsa id_rsa.pub authorized_keys config; do
    cp "$k/$f" "$s/$stamp/$f"; chmod "$MH_SSH_FILE_MODE" "$s/$stamp/$f"
    ln -s "..data/$f" "$s/$f"
  done
  ln -s "$stamp" "$s/..data"
  chmod 0755 "$s/$stamp"
  chmod "$MH_SSH_DIR_MODE" "$s"
}

# mh_pod_start <pod> [NAME=value ...] -- <command> [args]: starts the pod in the background
# with a container's clean environment plus the given variables and default signal
# dispositions (a script's background jobs start with SIGINT/SIGQUIT ignored); output to
# logs/<pod>.log.
mh_pod_start() {
  local pod=$1; shift
  local vars=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do vars+=("$1"); shift; done
  shift
  local ns=${MH_NS[$pod]} keep a
  [ -n "$ns" ] || mh_die "mh_pod_start: unknown pod '$pod'"
  # What the pod must still see under its private /root, /tmp, ...: the checkout, the
  # directories in MH_KEEP_PATHS (colon-separated) and those of the programs it runs.
  keep=$(cd "$MH_DIR/../.." && pwd)${MH_KEEP_PATHS:+:$MH_KEEP_PATHS}
  for a in "$@"; do
    case "$a" in /*) [ -e "$a" ] && keep+=":$(dirname "$a")" ;; esac
  done
  # MH_ETC_MPI: a directory mounted read-only at /etc/mpi (an MPIJob's ConfigMap with the hostfile).
  ip netns exec "$ns" env -i --default-signal PATH="$MH_POD_PATH" HOME=/root HOSTNAME="$pod" \
    ${MH_ETC_MPI:+GJMH_ETC_MPI="$MH_ETC_MPI"} "${vars[@]}" \
    unshare --uts --mount --pid --fork --mount-proc --propagation private -- \
    "$MH_DIR/pod_init.sh" "$pod" "$MH_RUN/hosts/$pod" "$MH_RUN/resolv.conf" "$MH_RUN/ssh" "$keep" -- "$@" \
    >>"$MH_RUN/logs/$pod.log" 2>&1 &
  MH_PID[$pod]=$!
  mh_log "pod $pod started (${MH_ADDR[$pod]}, pid ${MH_PID[$pod]}): $*"
}

# The host PID of the pod's PID 1 (its command), or nothing yet.
mh_pod_init_pid() { pgrep -P "${MH_PID[$1]}" 2>/dev/null | head -n1; }

# mh_pod_wait <pod> <seconds>: waits for the pod's command and sets MH_RC to its exit status
# (128+N for signal N). Returns 1 with MH_RC=timeout when it still runs after <seconds>.
# (Not usable inside $(...): a subshell cannot wait for the pod.)
mh_pod_wait() {
  local pod=$1 limit=$2 pid=${MH_PID[$1]} t=0
  MH_RC=0
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$t" -ge $((limit * 10)) ]; then MH_RC=timeout; return 1; fi
    sleep 0.1; t=$((t + 1))
  done
  { wait "$pid"; } 2>/dev/null || MH_RC=$?
  unset "MH_PID[$pod]"
  return 0
}

# Kills every process of a pod, as a node failure or a deleted pod does.
mh_pod_kill() { mh_kill_ns "${MH_NS[$1]}" "${2:-KILL}"; }

# Processes still running in a pod: host PID, program name (comm), command line.
mh_pod_ps() {
  local p pids
  pids=$(ip netns pids "${MH_NS[$1]}" 2>/dev/null || true)
  for p in $pids; do
    printf '%s %s %s\n' "$p" "$(cat "/proc/$p/comm" 2>/dev/null)" "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
  done
}

# Waits until <file> has a line matching <regex> (grep -E), at most <seconds>.
mh_wait_for_log() {
  local file=$1 regex=$2 limit=$3 t=0
  until grep -qE -- "$regex" "$file" 2>/dev/null; do
    if [ "$t" -ge $((limit * 10)) ]; then return 1; fi
    sleep 0.1; t=$((t + 1))
  done
}

mh_podlog() { echo "$MH_RUN/logs/$1.log"; }

# Removes everything mh_up made. Runs from the EXIT trap, also after a failed assertion.
mh_down() {
  local rc=$? pod
  trap - EXIT
  if [ -n "$MH_RUN" ] && [ "$rc" -ne 0 ] && [ "$rc" -ne "$MH_SKIP" ]; then mh_dump_logs; fi
  exec 3>&2 2>/dev/null  # bash's "Killed ..." job notices are noise here
  for pod in "${MH_PODS[@]}"; do
    [ -n "${MH_NS[$pod]:-}" ] && mh_kill_ns "${MH_NS[$pod]}" KILL
  done
  for pod in "${MH_PODS[@]}"; do
    [ -n "${MH_PID[$pod]:-}" ] && wait "${MH_PID[$pod]}"
    [ -n "${MH_NS[$pod]:-}" ] && ip netns del "${MH_NS[$pod]}" 2>/dev/null
  done
  [ -n "${MH_PREFIX:-}" ] && ip netns del "$MH_PREFIX-br" 2>/dev/null
  exec 2>&3 3>&-
  if [ -n "$MH_RUN" ] && [ -z "${MH_KEEP:-}" ]; then rm -rf "$MH_RUN"; fi
  [ -n "${MH_KEEP:-}" ] && mh_log "MH_KEEP set: run dir kept at $MH_RUN"
  exit "$rc"
}

mh_dump_logs() {
  local f
  for f in "$MH_RUN"/logs/*.log; do
    [ -f "$f" ] || continue
    echo "----- $(basename "$f") -----" >&2
    tail -n "${MH_LOG_LINES:-60}" "$f" >&2
  done
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -uo pipefail
  case "${1:-}" in
    check) if why=$(mh_missing_prereqs); then echo "ok: namespaces can be made"; else echo "cannot: $why"; exit "$MH_SKIP"; fi ;;
    sweep) mh_sweep ;;
    demo) shift; exec "$MH_DIR/demo.sh" "$@" ;;
    *) echo "usage: cluster.sh check | sweep | demo <build-dir> [program [args...]]" >&2; exit 2 ;;
  esac
fi
