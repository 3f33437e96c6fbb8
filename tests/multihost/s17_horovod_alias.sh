#!/bin/bash
# Scenario 17: the horovod alias across pods (issue 58). The seed's PyTorch script with `import
# horovod.torch` (tests/horovod_alias/seed_torch.py, under seed_alias_check.py) through `gj-mpirun
# --horovod-alias` on a 3-pod job: master 2 slots, workers 1 each (np 4). gj is the build tree's,
# on the master's PYTHONPATH only: the master passes the alias folder and its PYTHONPATH to every
# rank (-x), so the workers' ranks import horovod.torch as gj.torch too. Every rank ends with the
# same weights; rank 0 alone says that horovod is gj.
source "$(dirname "$0")/scenario.sh"
mh_scenario_init "$1" "$2"
build=$(realpath -e "${3:?the build folder}")
seed=$(realpath -e "${4:?seed_torch.py}")
out=$build/tests/multihost/horovod_alias_seed
mkdir -p "$out"
mh_up hvdalias 2
master=hvdalias-master-0
common=(GJ_PYTHON=/usr/bin/python3 GJ_SEED_OUTPUT="$out" GJ_SEED_ROWS=256)
mh_agent_pod "$master" 2 0 1 0 "${common[@]}" GJ_HOROVOD_ALIAS=1 PYTHONPATH="$build/collectives/python" \
  -- "$MH_PROG" torch "$seed"
for w in hvdalias-worker-0 hvdalias-worker-1; do mh_agent_pod "$w" 2 0 1 0 "${common[@]}" -- "$MH_PROG" torch "$seed"; done
mh_pod_wait "$master" 150
log=$(mh_podlog "$master")
mh_assert_eq "master exit code" 0 "$MH_RC"
mh_assert_grep "the seed ran as horovod on gj.torch, weights bitwise identical on the 4 ranks of 3 pods" \
  "OK: .*seed_torch.py ran on gj.torch as horovod .*identical on all 4 ranks" "$log"
mh_assert_eq "lines saying that horovod is gj (rank 0 only)" 1 "$(grep -c '^horovod is gj ' "$log")"
