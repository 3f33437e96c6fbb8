#!/bin/bash
# What a pod does without gj-mpirun, written by hand: the reference the harness was debugged
# with and the baseline of bench/launch/job_start.sh. Runs inside a pod (see cluster.sh).
#   plain_pod.sh sshd                      real sshd -D -e on port 22 (worker; also master's)
#   plain_pod.sh mpiexec <hosts> <np> <program> [args]
#                                          master: background sshd, then the hand-written mpiexec
# Everything it needs that the image lacks is made under /run/plain (the pod's own tmpfs):
# host key, privilege separation dir, a copy of authorized_keys and of the client key with
# mode 0600 (the Secret's files are group-readable, which both sshd and ssh refuse).
set -euo pipefail
state=/run/plain

prepare() {
  install -d -m 0700 "$state"
  install -d -m 0755 /run/sshd
  [ -f "$state/host_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -f "$state/host_ed25519"
  install -m 0600 /root/.ssh/authorized_keys "$state/authorized_keys"
  install -m 0600 /root/.ssh/id_rsa "$state/id_rsa"
  cat >"$state/sshd_config" <<CONF
Port 22
HostKey $state/host_ed25519
PidFile $state/sshd.pid
AuthorizedKeysFile $state/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PrintMotd no
PrintLastLog no
CONF
}

case "${1:-}" in
  sshd)
    prepare
    exec /usr/sbin/sshd -D -e -f "$state/sshd_config"
    ;;
  mpiexec)
    [ $# -ge 4 ] || { echo "usage: plain_pod.sh mpiexec <hosts> <np> <program> [args]" >&2; exit 2; }
    hosts=$2 np=$3; shift 3
    prepare
    /usr/sbin/sshd -D -e -f "$state/sshd_config" &
    exec mpiexec --allow-run-as-root --host "$hosts" -np "$np" --map-by slot --mca orte_keep_fqdn_hostnames 1 \
      --mca plm_rsh_args "-i $state/id_rsa -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=5 -o LogLevel=ERROR" \
      "$@"
    ;;
  *) echo "usage: plain_pod.sh sshd | mpiexec <hosts> <np> <program> [args]" >&2; exit 2 ;;
esac
