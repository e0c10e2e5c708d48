"""rankautopsy.runtime: what a training script imports so that each rank leaves evidence.

    import rankautopsy.runtime as ra
    ra.install()                       # faulthandler, a death record on an uncaught exception or SIGTERM
    for step in ...:
        ra.heartbeat(step)             # a line per interval at most; cheap to call every step
    ra.bounded_barrier(60)             # raises BarrierTimeout naming the ranks that never came

Imports only the standard library at import time (torch only inside bounded_barrier), and nothing else
of rankautopsy: a training script pays for no CLI, renderer or rule pack.
"""

from rankautopsy.runtime.barrier import BarrierTimeout, bounded_barrier, missing_ranks
from rankautopsy.runtime.hooks import (
    AbortOnException,
    Runtime,
    abort_on_exception,
    current,
    heartbeat,
    install,
    uninstall,
)
from rankautopsy.runtime.identity import Identity, identify
from rankautopsy.runtime.records import DEATH, HEARTBEAT, START

__all__ = [
    "DEATH",
    "HEARTBEAT",
    "START",
    "AbortOnException",
    "BarrierTimeout",
    "Identity",
    "Runtime",
    "abort_on_exception",
    "bounded_barrier",
    "current",
    "heartbeat",
    "identify",
    "install",
    "missing_ranks",
    "uninstall",
]
