"""Independent jobs over worker processes: streams are independent until the timeline.

Workers are forked, so they inherit the compiled rules and the scan engine's databases: only job
numbers go to them and only results come back. Where fork is not available the jobs run here.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

JOBS_ENV = "RANKAUTOPSY_JOBS"
PARALLEL_BYTES = 64 * 1024 * 1024  # below this much input, starting workers costs more than it saves

_J = TypeVar("_J")
_R = TypeVar("_R")
_state: list[Any] = []  # (jobs, work) of the run in progress, inherited by forked workers


def worker_count(sizes: Sequence[int], wanted: int | None = None) -> int:
    """`wanted`, else $RANKAUTOPSY_JOBS, else one per core when the input is big and split in files."""
    if wanted is None and (env := os.environ.get(JOBS_ENV, "").strip()):
        wanted = int(env) if env.isdigit() else None
    if wanted is not None:
        return max(1, wanted)
    if len(sizes) < 2 or sum(sizes) < PARALLEL_BYTES:
        return 1
    return max(1, min(len(sizes), _cores()))


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def run_all(jobs: Sequence[_J], work: Callable[[_J], _R], workers: int, weight: Callable[[_J], int]) -> list[_R]:
    """`work` on every job, in job order; the heaviest jobs start first."""
    if workers <= 1 or len(jobs) <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return [work(job) for job in jobs]
    order = sorted(range(len(jobs)), key=lambda i: -weight(jobs[i]))
    results: dict[int, _R] = {}
    _state[:] = [jobs, work]
    try:
        with multiprocessing.get_context("fork").Pool(min(workers, len(jobs))) as pool:
            for index, result in pool.imap_unordered(_run, order, chunksize=1):
                results[index] = result
    finally:
        _state.clear()
    return [results[i] for i in range(len(jobs))]


def _run(index: int) -> tuple[int, Any]:
    jobs, work = _state
    return index, work(jobs[index])
