"""bounded_barrier(): a barrier that gives up after a timeout and says which ranks never came."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

# ProcessGroupGloo::monitoredBarrier: "Ranks 1, 3 failed to pass monitoredBarrier in 5000 ms" (rank 0).
_MISSING = re.compile(r"Ranks? ([0-9][0-9, ]*) failed to pass monitoredBarrier")
_groups: dict[int, Any] = {}


class BarrierTimeout(RuntimeError):
    """Some ranks did not reach the barrier in time. `missing` names them (known on rank 0; elsewhere
    empty: a rank other than 0 only learns that rank 0 did not release it)."""

    def __init__(self, message: str, missing: tuple[int, ...]) -> None:
        super().__init__(message)
        self.missing = missing


def missing_ranks(message: str) -> tuple[int, ...]:
    m = _MISSING.search(message)
    return tuple(int(n) for n in re.findall(r"\d+", m[1])) if m else ()


def _gloo_group(dist: Any, group: Any) -> Any:
    """monitored_barrier exists only for gloo: a default NCCL group gets a gloo twin, made once (a
    collective call: every rank makes it at its first bounded barrier)."""
    if group is not None:
        return group
    if dist.get_backend() == "gloo":
        return None
    key = id(dist.group.WORLD)
    if key not in _groups:
        _groups[key] = dist.new_group(backend="gloo")
    return _groups[key]


def bounded_barrier(timeout: float, group: Any = None) -> None:
    """Wait for every rank, at most `timeout` seconds; raise BarrierTimeout naming the missing ranks."""
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError("bounded_barrier needs an initialised torch.distributed process group")
    pg = _gloo_group(dist, group)
    try:
        dist.monitored_barrier(group=pg, timeout=timedelta(seconds=timeout), wait_all_ranks=True)
    except RuntimeError as exc:
        missing = missing_ranks(str(exc))
        who = f"rank(s) {', '.join(map(str, missing))}" if missing else "a rank (rank 0 names which)"
        raise BarrierTimeout(
            f"bounded_barrier: {who} did not reach the barrier within {timeout:g} s: {exc}", missing
        ) from exc
