#!/bin/bash
# The first process of a pod. cluster.sh starts it already inside the pod's network namespace
# (ip netns exec) and fresh UTS, mount and PID namespaces (unshare), so it is PID 1 of the pod.
# It makes the mount namespace look like a Kubernetes pod of a Volcano MPI job, then execs the
# pod's command (which becomes PID 1, as a container command does):
#   hostname            = the pod name (<job>-worker-0)
#   /etc/hosts          = this pod's hosts file (every pod's <name>.<job>, own short name)
#   /root               = private tmpfs; /root/.ssh = the job's ssh Secret, read-only
#   /run /tmp /dev/shm /var/log = private tmpfs (own sshd state, Open MPI session dirs, wtmp)
# Usage: pod_init.sh <hostname> <hosts-file> <ssh-secret-dir> -- <command> [args...]
set -euo pipefail
if [ $# -lt 5 ] || [ "$4" != "--" ]; then
  echo "pod_init.sh: usage: pod_init.sh <hostname> <hosts-file> <ssh-secret-dir> -- <command> [args...]" >&2
  exit 2
fi
pod_hostname=$1 hosts_file=$2 ssh_secret=$3
shift 4

hostname "$pod_hostname"
# Order matters: the sources live under /tmp, so bind them before /tmp is replaced.
mount --bind "$hosts_file" /etc/hosts
mount -t tmpfs -o mode=0700 gjmh-root /root
mkdir /root/.ssh
mount --bind "$ssh_secret" /root/.ssh
mount -o remount,bind,ro /root/.ssh
mount -t tmpfs -o mode=0755 gjmh-run /run
mount -t tmpfs -o mode=1777 gjmh-tmp /tmp
mount -t tmpfs -o mode=1777 gjmh-shm /dev/shm
mount -t tmpfs -o mode=0755 gjmh-log /var/log
cd /
exec "$@"
