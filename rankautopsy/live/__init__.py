"""Live: follow growing logs and name the first death as soon as the evidence settles (`watch`).

Each stream is scanned incrementally (the map step over only its new bytes, with a bounded window of
the lines before them so that a traceback cut by a read is assembled whole); the reduce step
(`pipeline.conclude`) runs over the accumulated parts. May import the pipeline and every stage before
it; never a renderer or the CLI.
"""

from rankautopsy.live.watcher import Report, Watcher, WatchOptions

__all__ = ["Report", "WatchOptions", "Watcher"]
