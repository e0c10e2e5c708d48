"""Independent jobs over worker processes: streams are independent until the timeline.

Workers are forked, so they inherit the compiled rules and the scan engine's databases: only batches
of job numbers go to them, over a pipe each, and only results come back (pickled: what the main
process forked is all a worker runs). Where fork (or poll) is not available the jobs run here. The
pool is this module's own, not multiprocessing's: that one cost ~40 ms to import and start for a run
of 0.3 s.

A stop (SIGINT, SIGTERM) is the main process's to handle: workers ignore SIGINT (a Ctrl-C reaches the
whole process group) and die at once on SIGTERM, which the pool sends them when the main process
unwinds (SIGKILL a second later, for a stopped one); on Linux they also die with the main process,
should it be killed outright. Stops are blocked while the pool forks: a worker must not receive one
before it has set its own handlers (it would run the main process's, or lose the signal), so it
unblocks them only then. A worker's error is raised in the main process with the worker's traceback;
a worker that dies without its results ends the run with an error, never a hang.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from rankautopsy.records import record

JOBS_ENV = "RANKAUTOPSY_JOBS"
# Below both, forking the workers costs about what they save. Measured on 2 cores against one process:
# 16 files of 0.5 MB lost 10 ms, 32 of 1 MB broke even, 64 of 2 MB gained 6 %, 24 of 4 MB 4 %, 2 of
# 3.5 MB 29 %, 64 of 11 MB 16 % (each file costs ~2.5 ms however small it is).
PARALLEL_BYTES = 4 * 1024 * 1024
PARALLEL_FILES = 48
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


def spare_core(workers: int) -> bool:
    """Whether `workers` processes leave a core free."""
    return workers < _cores()


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
    if workers <= 1 or len(jobs) <= 1 or not hasattr(os, "fork") or not hasattr(select, "poll"):
        return [_tell(work(job), job, done) for job in jobs]
    order = sorted(range(len(jobs)), key=lambda i: -weight(jobs[i]))
    results: dict[int, _R] = {}
    _state[:] = [jobs, work]
    try:
        for index, result in _pool(_batches(order, workers), min(workers, len(jobs))):
            results[index] = _tell(result, jobs[index], done)
    finally:
        _state.clear()
    return [results[i] for i in range(len(jobs))]


@record
class _Worker:
    pid: int
    tasks: int  # the pipe the main process writes batches to
    results: int  # the pipe it reads their results from


def _pool(batches: list[list[int]], size: int) -> Iterator[tuple[int, Any]]:
    """Each batch's results, from `size` forked workers, each sent its next batch when it is done with
    one. Workers still busy when this ends (an error or a stop in the main process) are stopped."""
    pending = iter(batches)
    running: list[_Worker] = []
    busy: dict[int, _Worker] = {}  # by the pipe its results come on
    mask = _block(_STOPS)
    try:
        try:
            for _ in range(min(size, len(batches))):
                running.append(_fork([fd for w in running for fd in (w.tasks, w.results)]))
                busy[running[-1].results] = running[-1]
        finally:
            _unblock(mask)  # a stop that came while forking is raised here, where the workers are stopped
        ready = select.poll()  # not select(), which fails on descriptors past 1,023 (`watch` of 1,000 logs)
        for worker in running:
            ready.register(worker.results, select.POLLIN)
            _send(worker.tasks, next(pending))
        while busy:
            for fd, _ in ready.poll():
                ok, value = _receive(fd)
                if not ok:
                    raise value
                if (batch := next(pending, None)) is None:  # no more: the worker exits
                    _send(busy.pop(fd).tasks, None)
                    ready.unregister(fd)
                else:
                    _send(busy[fd].tasks, batch)
                yield from value
    finally:
        _stop(running, [w.pid for w in busy.values()])


def _fork(inherited: list[int]) -> _Worker:
    """A worker, which closes the main process's ends of the other workers' pipes (`inherited`)."""
    tasks_read, tasks_write = os.pipe()
    results_read, results_write = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the worker: serve batches until told to stop, then leave without the parent's exit hooks
        code = 1
        try:
            for fd in (tasks_write, results_read, *inherited):
                os.close(fd)
            _worker_start(parent)
            _serve(tasks_read, results_write)
            code = 0
        finally:
            os._exit(code)
    os.close(tasks_read)
    os.close(results_write)
    return _Worker(pid, tasks_write, results_read)


def _serve(tasks: int, results: int) -> None:
    jobs, work = _state
    while (batch := _receive(tasks)) is not None:
        try:
            value = (True, [(index, work(jobs[index])) for index in batch])
        except BaseException as exc:  # the main process raises it
            import traceback

            exc.add_note("in a rankautopsy worker process:\n" + traceback.format_exc())
            _send(results, (False, _picklable(exc)))
            return
        _send(results, value)


def _picklable(exc: BaseException) -> BaseException:
    import pickle

    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # any failure to pickle: send what it said instead
        return RuntimeError(f"{type(exc).__name__}: {exc}\n" + "\n".join(getattr(exc, "__notes__", ())))
    return exc


def _send(fd: int, value: object) -> None:
    import pickle  # here: a run in one process never loads it

    data = pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
    view = memoryview(len(data).to_bytes(8, "little") + data)
    while view:
        view = view[os.write(fd, view) :]


def _receive(fd: int) -> Any:
    import pickle

    size = int.from_bytes(_read(fd, 8), "little")
    return pickle.loads(_read(fd, size))


def _read(fd: int, size: int) -> bytes:
    parts, got = [], 0
    while got < size:
        part = os.read(fd, min(size - got, 1 << 20))
        if not part:
            raise RuntimeError("a rankautopsy worker process ended without its results (killed?)")
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def _stop(workers: list[_Worker], busy: list[int]) -> None:
    """Close the pipes and reap the workers. Those still busy (the main process is unwinding) are sent
    SIGTERM, and SIGKILL if they are still there a second later (a stopped process cannot act on it)."""
    for worker in workers:
        for fd in (worker.tasks, worker.results):
            with contextlib.suppress(OSError):
                os.close(fd)
    for pid in busy:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 1.0
    for pid in busy:
        while not (gone := _reaped(pid, os.WNOHANG)) and time.monotonic() < deadline:
            time.sleep(0.005)
        if not gone:  # not reaped: the pid is still our child's
            os.kill(pid, signal.SIGKILL)
    for worker in workers:  # the others were told to exit (or died): they are gone or going
        _reaped(worker.pid, 0)


def _reaped(pid: int, flags: int) -> bool:
    try:
        return os.waitpid(pid, flags)[0] != 0
    except ChildProcessError:
        return True


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
