"""Independent jobs over worker processes: streams are independent until the timeline.

Workers are forked, so they inherit the compiled rules and the scan engine's databases: only job
numbers go to them and only results come back. Where fork is not available the jobs run here.

A stop (SIGINT, SIGTERM) is the main process's to handle: workers ignore SIGINT (a Ctrl-C reaches the
whole process group) and die at once on SIGTERM, which the pool sends them when the main process
unwinds; on Linux they also die with the main process, should it be killed outright. Stops are blocked
while the pool forks: a worker must not receive one before it has set its own handlers (it would run
the main process's, or lose the signal), so it unblocks them only then.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

JOBS_ENV = "RANKAUTOPSY_JOBS"
# Below both, starting workers (importing multiprocessing, forking) costs about what it saves: measured
# on 2 cores, 64 files of 2 MB in all gained nothing, 64 files of 11 MB 12 %, 512 files of 17 MB 20 %
# (each file costs ~2 ms however small it is).
PARALLEL_BYTES = 8 * 1024 * 1024
PARALLEL_FILES = 96
BATCHES_PER_WORKER = 8
_PR_SET_PDEATHSIG = 1
_STOPS = {getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)}

_J = TypeVar("_J")
_R = TypeVar("_R")
_state: list[Any] = []  # (jobs, work) of the run in progress, inherited by forked workers


def worker_count(sizes: Sequence[int], wanted: int | None = None) -> int:
    """`wanted`, else $RANKAUTOPSY_JOBS, else one per core when the input is split in files and they
    are big or many."""
    if wanted is None and (env := os.environ.get(JOBS_ENV, "").strip()):
        wanted = int(env) if env.isdigit() else None
    if wanted is not None:
        return max(1, wanted)
    if len(sizes) < 2 or (sum(sizes) < PARALLEL_BYTES and len(sizes) < PARALLEL_FILES):
        return 1
    return max(1, min(len(sizes), _cores()))


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def run_all(
    jobs: Sequence[_J],
    work: Callable[[_J], _R],
    workers: int,
    weight: Callable[[_J], int],
    done: Callable[[_J], None] | None = None,
) -> list[_R]:
    """`work` on every job, in job order; the heaviest jobs start first; `done` is told of each job
    as it finishes, here in the main process."""
    if workers <= 1 or len(jobs) <= 1:
        return [_tell(work(job), job, done) for job in jobs]
    import multiprocessing  # a small diagnosis runs in one process and need not pay for it

    if "fork" not in multiprocessing.get_all_start_methods():
        return [_tell(work(job), job, done) for job in jobs]
    order = sorted(range(len(jobs)), key=lambda i: -weight(jobs[i]))
    results: dict[int, _R] = {}
    _state[:] = [jobs, work]
    try:
        mask = _block(_STOPS)
        try:
            pool = multiprocessing.get_context("fork").Pool(
                min(workers, len(jobs)), initializer=_worker_start, initargs=(os.getpid(),)
            )
        except BaseException:
            _unblock(mask)
            raise
        with pool:
            _unblock(mask)  # a stop that came while forking is raised here, where the pool is cleaned up
            for batch in pool.imap_unordered(_run, _batches(order, workers), chunksize=1):
                for index, result in batch:
                    results[index] = _tell(result, jobs[index], done)
    finally:
        _state.clear()
    return [results[i] for i in range(len(jobs))]


def _tell(result: _R, job: _J, done: Callable[[_J], None] | None) -> _R:
    if done is not None:
        done(job)
    return result


def _block(signals: set[int]) -> set[int] | None:
    if not hasattr(signal, "pthread_sigmask"):
        return None
    return set(signal.pthread_sigmask(signal.SIG_BLOCK, signals))


def _unblock(mask: set[int] | None) -> None:
    if mask is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _worker_start(parent: int) -> None:
    for signum in _STOPS:
        signal.signal(signum, signal.SIG_IGN if signum == signal.SIGINT else signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        _die_with_parent(parent)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)  # blocked by the parent while it forked


def _die_with_parent(parent: int) -> None:
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def _batches(order: list[int], workers: int) -> list[list[int]]:
    """The jobs, heaviest first, in batches: a few per worker and round, so that hundreds of small
    files do not pay a round trip each, and the last batches are small enough to even out the end."""
    size = max(1, len(order) // (workers * BATCHES_PER_WORKER))
    return [order[i : i + size] for i in range(0, len(order), size)]


def _run(batch: list[int]) -> list[tuple[int, Any]]:
    jobs, work = _state
    return [(index, work(jobs[index])) for index in batch]
