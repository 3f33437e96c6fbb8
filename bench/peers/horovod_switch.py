"""Horovod running only while its own calls are timed (torch and TensorFlow programs alike).

Horovod's background thread runs its coordination cycle (HOROVOD_CYCLE_TIME, 1 ms by default)
whether or not a call is pending, and with its MPI controller rank 0 spends most of a core in it
while idle (measured on the 2-vCPU VM: rank 0 92 % of a core, rank 1 2 %; Gloo controller 11-13 %
each; gj's threads 0 %). In the processes that also run gj, that cycle would take the CPU from
gj's timed calls and from every mode's compute, on 2 vCPUs half the machine. So the comparison
programs shut Horovod down (hvd.shutdown()) while they time anything else and start it again
(hvd.init()) before its own calls: collective, every rank switches at the same point of the same
loop; after each start one untimed call (Horovod's caches and fusion buffer start empty). Restarts
cost 1-4 ms (MPI controller) or about 0.1 s (Gloo: a new rendezvous), outside the timed batches.
"""


class HorovodSwitch:
    """Keeps horovod (a horovod.torch or horovod.tensorflow module, or None) running exactly while
    a mode whose name starts with "horovod" runs. Starts as `running` says (after hvd.init())."""

    def __init__(self, hvd, running=True, before_start=None):
        """`before_start`, if given, is called on every rank right before each restart's
        hvd.init() (the Gloo controller's fresh rendezvous, peers.py)."""
        self.hvd = hvd
        self.running = hvd is not None and running
        self.before_start = before_start

    def before(self, mode):
        """Call before running (or timing) `mode`: starts or shuts Horovod down as the mode needs.
        Returns True when Horovod was just started: the caller runs the mode once untimed."""
        if self.hvd is None:
            return False
        wanted = mode.startswith("horovod")
        if wanted == self.running:
            return False
        if wanted:
            if self.before_start:
                self.before_start()
            self.hvd.init()
        else:
            self.hvd.shutdown()
        self.running = wanted
        return wanted
