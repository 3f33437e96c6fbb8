#!/bin/bash
# Scenario 11: the workers' image has a ~/.bashrc that puts another python3 first in PATH (as
# pyenv and `conda init` do) for every ssh session, so every rank Open MPI starts there would run
# that interpreter. Ranks must run with their pod's own PATH: every rank of this Python job must
# run the pod's python3, none the impostor.
source "$(dirname "$0")/scenario.sh"
mh_scenario_init "$@"
mh_up rc 2
fake="$MH_RUN/fakebin"
mkdir -p "$fake"
printf '#!/bin/sh\necho "IMPOSTOR python3 on $(hostname)"\nexit 3\n' >"$fake/python3"
chmod 0755 "$fake/python3"
MH_KEEP_PATHS+=":$fake"
master=rc-master-0
for w in rc-worker-0 rc-worker-1; do
  mh_agent_pod "$w" 1 0 1 0 GJMH_BASHRC="export PATH=$fake:\$PATH" -- "$MH_PROG" x
done
mh_agent_pod "$master" 1 0 1 0 -- "$MH_PROG" x
mh_pod_wait "$master" 45
log=$(mh_rank_lines "$(mh_podlog "$master")")
mh_assert_no_grep "no rank ran the ~/.bashrc interpreter" 'IMPOSTOR' "$log"
mh_assert_eq "master exit code" 0 "$MH_RC"
for r in 0 1 2; do mh_assert_grep "python rank $r ran" "^PYRANK $r/3 " "$log"; done
