"""gj.common: the framework-neutral core of gj's Horovod-compatible frontends (gj.torch,
gj.tensorflow), as horovod/common is Horovod's: process state, process sets, the cross-rank
agreement, handles, the control channel (barrier), the stall watch, the timeline, Horovod's
environment variables, capabilities, exceptions, buckets and elastic state. Nothing here imports
a framework; a frontend adapts its tensors to the library's C ABI and stands on these modules.

Imports run one way (no circles): the leaves (state, exceptions, stall, horovod_env,
capabilities, buckets, exit_hooks) import no module of this package but state's stall; then
process_sets, control and timeline (on state); handles and agreement (on those); elastic (on
exceptions); basics (init/shutdown) on top.
"""
