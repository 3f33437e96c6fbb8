#!/bin/bash
# The first process of a pod. cluster.sh starts it already inside the pod's network namespace
# (ip netns exec) and fresh UTS, mount and PID namespaces (unshare), so it is PID 1 of the pod.
# It makes the mount namespace look like a Kubernetes pod of a Volcano MPI job, then execs the
# pod's command (which becomes PID 1, as a container command does):
#   hostname            = the pod name (<job>-worker-0)
#   /etc/hosts          = this pod's hosts file (every pod's <name>.<job>, own short name)
#   /root/.bashrc       = $GJMH_BASHRC when set (an image's shell startup file)
#   /etc/mpi            = $GJMH_ETC_MPI read-only when set (an MPIJob's hostfile)
#   /etc/resolv.conf    = nameserver 127.0.0.1: names not in the hosts file fail at once, on
#                         the pod's own loopback (no DNS query leaves, whatever the machine uses)
#   /root               = private tmpfs; /root/.ssh = the job's ssh Secret, read-only
#   /run /tmp /dev/shm /var/log = private tmpfs (own sshd state, Open MPI session dirs, wtmp)
#   <keep paths>        = directories the pod needs (the checkout, the build dir) that lie under
#                         one of the private dirs above are bound back into them (a CI
#                         checkout may well live in /root or /tmp)
# Usage: pod_init.sh <hostname> <hosts-file> <resolv.conf> <ssh-secret-dir> <keep:paths> -- <command> [args...]
set -euo pipefail
if [ $# -lt 7 ] || [ "$6" != "--" ]; then
  echo "pod_init.sh: usage: pod_init.sh <hostname> <hosts-file> <resolv.conf> <ssh-secret-dir> <keep:paths> -- <command> [args...]" >&2
  exit 2
fi
pod_hostname=$1 hosts_file=$2 resolv_conf=$3 ssh_secret=$4 keep_list=$5
shift 6
private_dirs=(/root /run /tmp /dev/shm /var/log)

# Hold every keep path that a private dir will hide by an open fd; bound back afterwards
# through /proc/self/fd (mount must not canonicalize that name into the hidden path).
keep_paths=() keep_fds=() fd=20
IFS=: read -ra wanted <<<"$keep_list"
for p in "${wanted[@]}"; do
  for d in "${private_dirs[@]}"; do
    case "$p/" in
      "$d"/?*) eval "exec $fd<\"\$p\""; keep_paths+=("$p"); keep_fds+=("$fd"); fd=$((fd + 1)); break ;;
    esac
  done
done

hostname "$pod_hostname"
# Order matters: the sources live under /tmp, so bind them before /tmp is replaced.
mount --bind "$hosts_file" /etc/hosts
mount --bind "$resolv_conf" /etc/resolv.conf
if [ -n "${GJMH_ETC_MPI:-}" ]; then  # an MPIJob's config volume, read-only as the operator mounts it
  mkdir -p /etc/mpi
  mount --bind "$GJMH_ETC_MPI" /etc/mpi
  mount -o remount,bind,ro /etc/mpi
fi
unset GJMH_ETC_MPI
mount -t tmpfs -o mode=0700 gjmh-root /root
mkdir /root/.ssh
if [ -n "${GJMH_BASHRC:-}" ]; then  # the image's ~/.bashrc (pyenv, conda init): runs in every ssh session
  printf '%s\n' "$GJMH_BASHRC" >/root/.bashrc
fi
unset GJMH_BASHRC
mount --bind "$ssh_secret" /root/.ssh
mount -o remount,bind,ro /root/.ssh
mount -t tmpfs -o mode=0755 gjmh-run /run
mount -t tmpfs -o mode=1777 gjmh-tmp /tmp
mount -t tmpfs -o mode=1777 gjmh-shm /dev/shm
mount -t tmpfs -o mode=0755 gjmh-log /var/log
for i in "${!keep_paths[@]}"; do
  mkdir -p "${keep_paths[$i]}"
  mount --no-canonicalize --bind "/proc/self/fd/${keep_fds[$i]}" "${keep_paths[$i]}"
  eval "exec ${keep_fds[$i]}<&-"
done
cd /
exec "$@"
