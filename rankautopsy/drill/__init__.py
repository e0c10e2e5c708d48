"""The injected-death drill: a small CPU gloo job under torchrun in which one rank dies in a chosen way
at a chosen step; `diagnose` must name that rank and cause, and the job must end in bounded time.

May import the pipeline and everything before it, and the runtime (which the job's ranks use); never
the CLI or a renderer. torch is needed only to run a drill, never to import this package.
"""

from rankautopsy.drill.run import EXPECTED, HOWS, DrillResult, run_drill

__all__ = ["EXPECTED", "HOWS", "DrillResult", "run_drill"]
